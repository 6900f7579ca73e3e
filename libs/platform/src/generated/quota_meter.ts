import type * as grpc from '@grpc/grpc-js';
import type { EnumTypeDefinition, MessageTypeDefinition } from '@grpc/proto-loader';

import type { Account as _tollgate_quota_v1_Account, Account__Output as _tollgate_quota_v1_Account__Output } from './tollgate/quota/v1/Account.ts';
import type { AccountCredits as _tollgate_quota_v1_AccountCredits, AccountCredits__Output as _tollgate_quota_v1_AccountCredits__Output } from './tollgate/quota/v1/AccountCredits.ts';
import type { AccountServiceClient as _tollgate_quota_v1_AccountServiceClient, AccountServiceDefinition as _tollgate_quota_v1_AccountServiceDefinition } from './tollgate/quota/v1/AccountService.ts';
import type { AdjustCreditsRequest as _tollgate_quota_v1_AdjustCreditsRequest, AdjustCreditsRequest__Output as _tollgate_quota_v1_AdjustCreditsRequest__Output } from './tollgate/quota/v1/AdjustCreditsRequest.ts';
import type { AdjustCreditsResponse as _tollgate_quota_v1_AdjustCreditsResponse, AdjustCreditsResponse__Output as _tollgate_quota_v1_AdjustCreditsResponse__Output } from './tollgate/quota/v1/AdjustCreditsResponse.ts';
import type { ApiKey as _tollgate_quota_v1_ApiKey, ApiKey__Output as _tollgate_quota_v1_ApiKey__Output } from './tollgate/quota/v1/ApiKey.ts';
import type { AuthorizeRequest as _tollgate_quota_v1_AuthorizeRequest, AuthorizeRequest__Output as _tollgate_quota_v1_AuthorizeRequest__Output } from './tollgate/quota/v1/AuthorizeRequest.ts';
import type { AuthorizeResponse as _tollgate_quota_v1_AuthorizeResponse, AuthorizeResponse__Output as _tollgate_quota_v1_AuthorizeResponse__Output } from './tollgate/quota/v1/AuthorizeResponse.ts';
import type { CreateAccountRequest as _tollgate_quota_v1_CreateAccountRequest, CreateAccountRequest__Output as _tollgate_quota_v1_CreateAccountRequest__Output } from './tollgate/quota/v1/CreateAccountRequest.ts';
import type { CreateAccountResponse as _tollgate_quota_v1_CreateAccountResponse, CreateAccountResponse__Output as _tollgate_quota_v1_CreateAccountResponse__Output } from './tollgate/quota/v1/CreateAccountResponse.ts';
import type { CreateKeyRequest as _tollgate_quota_v1_CreateKeyRequest, CreateKeyRequest__Output as _tollgate_quota_v1_CreateKeyRequest__Output } from './tollgate/quota/v1/CreateKeyRequest.ts';
import type { CreateKeyResponse as _tollgate_quota_v1_CreateKeyResponse, CreateKeyResponse__Output as _tollgate_quota_v1_CreateKeyResponse__Output } from './tollgate/quota/v1/CreateKeyResponse.ts';
import type { CreateOwnKeyRequest as _tollgate_quota_v1_CreateOwnKeyRequest, CreateOwnKeyRequest__Output as _tollgate_quota_v1_CreateOwnKeyRequest__Output } from './tollgate/quota/v1/CreateOwnKeyRequest.ts';
import type { CreateOwnKeyResponse as _tollgate_quota_v1_CreateOwnKeyResponse, CreateOwnKeyResponse__Output as _tollgate_quota_v1_CreateOwnKeyResponse__Output } from './tollgate/quota/v1/CreateOwnKeyResponse.ts';
import type { CreditDay as _tollgate_quota_v1_CreditDay, CreditDay__Output as _tollgate_quota_v1_CreditDay__Output } from './tollgate/quota/v1/CreditDay.ts';
import type { CreditDraw as _tollgate_quota_v1_CreditDraw, CreditDraw__Output as _tollgate_quota_v1_CreditDraw__Output } from './tollgate/quota/v1/CreditDraw.ts';
import type { CreditMovement as _tollgate_quota_v1_CreditMovement, CreditMovement__Output as _tollgate_quota_v1_CreditMovement__Output } from './tollgate/quota/v1/CreditMovement.ts';
import type { CreditServiceClient as _tollgate_quota_v1_CreditServiceClient, CreditServiceDefinition as _tollgate_quota_v1_CreditServiceDefinition } from './tollgate/quota/v1/CreditService.ts';
import type { CreditTopUpRequest as _tollgate_quota_v1_CreditTopUpRequest, CreditTopUpRequest__Output as _tollgate_quota_v1_CreditTopUpRequest__Output } from './tollgate/quota/v1/CreditTopUpRequest.ts';
import type { CreditTopUpResponse as _tollgate_quota_v1_CreditTopUpResponse, CreditTopUpResponse__Output as _tollgate_quota_v1_CreditTopUpResponse__Output } from './tollgate/quota/v1/CreditTopUpResponse.ts';
import type { DailyUsage as _tollgate_quota_v1_DailyUsage, DailyUsage__Output as _tollgate_quota_v1_DailyUsage__Output } from './tollgate/quota/v1/DailyUsage.ts';
import type { DescribePlansRequest as _tollgate_quota_v1_DescribePlansRequest, DescribePlansRequest__Output as _tollgate_quota_v1_DescribePlansRequest__Output } from './tollgate/quota/v1/DescribePlansRequest.ts';
import type { DescribePlansResponse as _tollgate_quota_v1_DescribePlansResponse, DescribePlansResponse__Output as _tollgate_quota_v1_DescribePlansResponse__Output } from './tollgate/quota/v1/DescribePlansResponse.ts';
import type { GetAccountRequest as _tollgate_quota_v1_GetAccountRequest, GetAccountRequest__Output as _tollgate_quota_v1_GetAccountRequest__Output } from './tollgate/quota/v1/GetAccountRequest.ts';
import type { GetAccountResponse as _tollgate_quota_v1_GetAccountResponse, GetAccountResponse__Output as _tollgate_quota_v1_GetAccountResponse__Output } from './tollgate/quota/v1/GetAccountResponse.ts';
import type { GetOwnCreditsRequest as _tollgate_quota_v1_GetOwnCreditsRequest, GetOwnCreditsRequest__Output as _tollgate_quota_v1_GetOwnCreditsRequest__Output } from './tollgate/quota/v1/GetOwnCreditsRequest.ts';
import type { GetOwnCreditsResponse as _tollgate_quota_v1_GetOwnCreditsResponse, GetOwnCreditsResponse__Output as _tollgate_quota_v1_GetOwnCreditsResponse__Output } from './tollgate/quota/v1/GetOwnCreditsResponse.ts';
import type { GetOwnUsageRequest as _tollgate_quota_v1_GetOwnUsageRequest, GetOwnUsageRequest__Output as _tollgate_quota_v1_GetOwnUsageRequest__Output } from './tollgate/quota/v1/GetOwnUsageRequest.ts';
import type { GetOwnUsageResponse as _tollgate_quota_v1_GetOwnUsageResponse, GetOwnUsageResponse__Output as _tollgate_quota_v1_GetOwnUsageResponse__Output } from './tollgate/quota/v1/GetOwnUsageResponse.ts';
import type { GetUsageRequest as _tollgate_quota_v1_GetUsageRequest, GetUsageRequest__Output as _tollgate_quota_v1_GetUsageRequest__Output } from './tollgate/quota/v1/GetUsageRequest.ts';
import type { GetUsageResponse as _tollgate_quota_v1_GetUsageResponse, GetUsageResponse__Output as _tollgate_quota_v1_GetUsageResponse__Output } from './tollgate/quota/v1/GetUsageResponse.ts';
import type { Lease as _tollgate_quota_v1_Lease, Lease__Output as _tollgate_quota_v1_Lease__Output } from './tollgate/quota/v1/Lease.ts';
import type { LeaseReturn as _tollgate_quota_v1_LeaseReturn, LeaseReturn__Output as _tollgate_quota_v1_LeaseReturn__Output } from './tollgate/quota/v1/LeaseReturn.ts';
import type { ListCreditMovementsRequest as _tollgate_quota_v1_ListCreditMovementsRequest, ListCreditMovementsRequest__Output as _tollgate_quota_v1_ListCreditMovementsRequest__Output } from './tollgate/quota/v1/ListCreditMovementsRequest.ts';
import type { ListCreditMovementsResponse as _tollgate_quota_v1_ListCreditMovementsResponse, ListCreditMovementsResponse__Output as _tollgate_quota_v1_ListCreditMovementsResponse__Output } from './tollgate/quota/v1/ListCreditMovementsResponse.ts';
import type { ListKeysRequest as _tollgate_quota_v1_ListKeysRequest, ListKeysRequest__Output as _tollgate_quota_v1_ListKeysRequest__Output } from './tollgate/quota/v1/ListKeysRequest.ts';
import type { ListKeysResponse as _tollgate_quota_v1_ListKeysResponse, ListKeysResponse__Output as _tollgate_quota_v1_ListKeysResponse__Output } from './tollgate/quota/v1/ListKeysResponse.ts';
import type { ListOwnKeysRequest as _tollgate_quota_v1_ListOwnKeysRequest, ListOwnKeysRequest__Output as _tollgate_quota_v1_ListOwnKeysRequest__Output } from './tollgate/quota/v1/ListOwnKeysRequest.ts';
import type { ListOwnKeysResponse as _tollgate_quota_v1_ListOwnKeysResponse, ListOwnKeysResponse__Output as _tollgate_quota_v1_ListOwnKeysResponse__Output } from './tollgate/quota/v1/ListOwnKeysResponse.ts';
import type { OpenCreditLease as _tollgate_quota_v1_OpenCreditLease, OpenCreditLease__Output as _tollgate_quota_v1_OpenCreditLease__Output } from './tollgate/quota/v1/OpenCreditLease.ts';
import type { Plan as _tollgate_quota_v1_Plan, Plan__Output as _tollgate_quota_v1_Plan__Output } from './tollgate/quota/v1/Plan.ts';
import type { Quota as _tollgate_quota_v1_Quota, Quota__Output as _tollgate_quota_v1_Quota__Output } from './tollgate/quota/v1/Quota.ts';
import type { QuotaAdminServiceClient as _tollgate_quota_v1_QuotaAdminServiceClient, QuotaAdminServiceDefinition as _tollgate_quota_v1_QuotaAdminServiceDefinition } from './tollgate/quota/v1/QuotaAdminService.ts';
import type { QuotaMeterServiceClient as _tollgate_quota_v1_QuotaMeterServiceClient, QuotaMeterServiceDefinition as _tollgate_quota_v1_QuotaMeterServiceDefinition } from './tollgate/quota/v1/QuotaMeterService.ts';
import type { ReplaceOwnKeyRequest as _tollgate_quota_v1_ReplaceOwnKeyRequest, ReplaceOwnKeyRequest__Output as _tollgate_quota_v1_ReplaceOwnKeyRequest__Output } from './tollgate/quota/v1/ReplaceOwnKeyRequest.ts';
import type { ReplaceOwnKeyResponse as _tollgate_quota_v1_ReplaceOwnKeyResponse, ReplaceOwnKeyResponse__Output as _tollgate_quota_v1_ReplaceOwnKeyResponse__Output } from './tollgate/quota/v1/ReplaceOwnKeyResponse.ts';
import type { ReportUsageRequest as _tollgate_quota_v1_ReportUsageRequest, ReportUsageRequest__Output as _tollgate_quota_v1_ReportUsageRequest__Output } from './tollgate/quota/v1/ReportUsageRequest.ts';
import type { ReportUsageResponse as _tollgate_quota_v1_ReportUsageResponse, ReportUsageResponse__Output as _tollgate_quota_v1_ReportUsageResponse__Output } from './tollgate/quota/v1/ReportUsageResponse.ts';
import type { ResolveWalletAccountRequest as _tollgate_quota_v1_ResolveWalletAccountRequest, ResolveWalletAccountRequest__Output as _tollgate_quota_v1_ResolveWalletAccountRequest__Output } from './tollgate/quota/v1/ResolveWalletAccountRequest.ts';
import type { ResolveWalletAccountResponse as _tollgate_quota_v1_ResolveWalletAccountResponse, ResolveWalletAccountResponse__Output as _tollgate_quota_v1_ResolveWalletAccountResponse__Output } from './tollgate/quota/v1/ResolveWalletAccountResponse.ts';
import type { RevokeKeyRequest as _tollgate_quota_v1_RevokeKeyRequest, RevokeKeyRequest__Output as _tollgate_quota_v1_RevokeKeyRequest__Output } from './tollgate/quota/v1/RevokeKeyRequest.ts';
import type { RevokeKeyResponse as _tollgate_quota_v1_RevokeKeyResponse, RevokeKeyResponse__Output as _tollgate_quota_v1_RevokeKeyResponse__Output } from './tollgate/quota/v1/RevokeKeyResponse.ts';
import type { RevokeOwnKeyRequest as _tollgate_quota_v1_RevokeOwnKeyRequest, RevokeOwnKeyRequest__Output as _tollgate_quota_v1_RevokeOwnKeyRequest__Output } from './tollgate/quota/v1/RevokeOwnKeyRequest.ts';
import type { RevokeOwnKeyResponse as _tollgate_quota_v1_RevokeOwnKeyResponse, RevokeOwnKeyResponse__Output as _tollgate_quota_v1_RevokeOwnKeyResponse__Output } from './tollgate/quota/v1/RevokeOwnKeyResponse.ts';
import type { UpdateAccountRequest as _tollgate_quota_v1_UpdateAccountRequest, UpdateAccountRequest__Output as _tollgate_quota_v1_UpdateAccountRequest__Output } from './tollgate/quota/v1/UpdateAccountRequest.ts';
import type { UpdateAccountResponse as _tollgate_quota_v1_UpdateAccountResponse, UpdateAccountResponse__Output as _tollgate_quota_v1_UpdateAccountResponse__Output } from './tollgate/quota/v1/UpdateAccountResponse.ts';
import type { UsageRecord as _tollgate_quota_v1_UsageRecord, UsageRecord__Output as _tollgate_quota_v1_UsageRecord__Output } from './tollgate/quota/v1/UsageRecord.ts';

type SubtypeConstructor<Constructor extends new (...args: any) => any, Subtype> = {
  new(...args: ConstructorParameters<Constructor>): Subtype;
};

export interface ProtoGrpcType {
  tollgate: {
    quota: {
      v1: {
        Account: MessageTypeDefinition<_tollgate_quota_v1_Account, _tollgate_quota_v1_Account__Output>
        AccountCredits: MessageTypeDefinition<_tollgate_quota_v1_AccountCredits, _tollgate_quota_v1_AccountCredits__Output>
        /**
         * AccountService is what a signed-in user may do to their own account, called by the dashboard
         * (mesh caller "dashboard") after it verified the user's wallet signature (EIP-4361). Every
         * method but ResolveWalletAccount names the account; quota-meter answers only about that account's
         * own keys (a key of another account is NOT_FOUND, as if it did not exist). The operator token is
         * never involved.
         */
        AccountService: SubtypeConstructor<typeof grpc.Client, _tollgate_quota_v1_AccountServiceClient> & { service: _tollgate_quota_v1_AccountServiceDefinition }
        AdjustCreditsRequest: MessageTypeDefinition<_tollgate_quota_v1_AdjustCreditsRequest, _tollgate_quota_v1_AdjustCreditsRequest__Output>
        AdjustCreditsResponse: MessageTypeDefinition<_tollgate_quota_v1_AdjustCreditsResponse, _tollgate_quota_v1_AdjustCreditsResponse__Output>
        ApiKey: MessageTypeDefinition<_tollgate_quota_v1_ApiKey, _tollgate_quota_v1_ApiKey__Output>
        AuthorizeRequest: MessageTypeDefinition<_tollgate_quota_v1_AuthorizeRequest, _tollgate_quota_v1_AuthorizeRequest__Output>
        AuthorizeResponse: MessageTypeDefinition<_tollgate_quota_v1_AuthorizeResponse, _tollgate_quota_v1_AuthorizeResponse__Output>
        CreateAccountRequest: MessageTypeDefinition<_tollgate_quota_v1_CreateAccountRequest, _tollgate_quota_v1_CreateAccountRequest__Output>
        CreateAccountResponse: MessageTypeDefinition<_tollgate_quota_v1_CreateAccountResponse, _tollgate_quota_v1_CreateAccountResponse__Output>
        CreateKeyRequest: MessageTypeDefinition<_tollgate_quota_v1_CreateKeyRequest, _tollgate_quota_v1_CreateKeyRequest__Output>
        CreateKeyResponse: MessageTypeDefinition<_tollgate_quota_v1_CreateKeyResponse, _tollgate_quota_v1_CreateKeyResponse__Output>
        CreateOwnKeyRequest: MessageTypeDefinition<_tollgate_quota_v1_CreateOwnKeyRequest, _tollgate_quota_v1_CreateOwnKeyRequest__Output>
        CreateOwnKeyResponse: MessageTypeDefinition<_tollgate_quota_v1_CreateOwnKeyResponse, _tollgate_quota_v1_CreateOwnKeyResponse__Output>
        CreditDay: MessageTypeDefinition<_tollgate_quota_v1_CreditDay, _tollgate_quota_v1_CreditDay__Output>
        CreditDraw: MessageTypeDefinition<_tollgate_quota_v1_CreditDraw, _tollgate_quota_v1_CreditDraw__Output>
        CreditMovement: MessageTypeDefinition<_tollgate_quota_v1_CreditMovement, _tollgate_quota_v1_CreditMovement__Output>
        /**
         * CreditService adds prepaid credits to an account, called by the gateway (mesh caller "gateway")
         * after payment-verifier settled a top-up payment. Credits are USDC atomic units; the ledger in
         * PostgreSQL is their record, Redis their hot copy (as for quota windows).
         */
        CreditService: SubtypeConstructor<typeof grpc.Client, _tollgate_quota_v1_CreditServiceClient> & { service: _tollgate_quota_v1_CreditServiceDefinition }
        CreditTopUpRequest: MessageTypeDefinition<_tollgate_quota_v1_CreditTopUpRequest, _tollgate_quota_v1_CreditTopUpRequest__Output>
        CreditTopUpResponse: MessageTypeDefinition<_tollgate_quota_v1_CreditTopUpResponse, _tollgate_quota_v1_CreditTopUpResponse__Output>
        DailyUsage: MessageTypeDefinition<_tollgate_quota_v1_DailyUsage, _tollgate_quota_v1_DailyUsage__Output>
        Decision: EnumTypeDefinition
        DescribePlansRequest: MessageTypeDefinition<_tollgate_quota_v1_DescribePlansRequest, _tollgate_quota_v1_DescribePlansRequest__Output>
        DescribePlansResponse: MessageTypeDefinition<_tollgate_quota_v1_DescribePlansResponse, _tollgate_quota_v1_DescribePlansResponse__Output>
        GetAccountRequest: MessageTypeDefinition<_tollgate_quota_v1_GetAccountRequest, _tollgate_quota_v1_GetAccountRequest__Output>
        GetAccountResponse: MessageTypeDefinition<_tollgate_quota_v1_GetAccountResponse, _tollgate_quota_v1_GetAccountResponse__Output>
        GetOwnCreditsRequest: MessageTypeDefinition<_tollgate_quota_v1_GetOwnCreditsRequest, _tollgate_quota_v1_GetOwnCreditsRequest__Output>
        GetOwnCreditsResponse: MessageTypeDefinition<_tollgate_quota_v1_GetOwnCreditsResponse, _tollgate_quota_v1_GetOwnCreditsResponse__Output>
        GetOwnUsageRequest: MessageTypeDefinition<_tollgate_quota_v1_GetOwnUsageRequest, _tollgate_quota_v1_GetOwnUsageRequest__Output>
        GetOwnUsageResponse: MessageTypeDefinition<_tollgate_quota_v1_GetOwnUsageResponse, _tollgate_quota_v1_GetOwnUsageResponse__Output>
        GetUsageRequest: MessageTypeDefinition<_tollgate_quota_v1_GetUsageRequest, _tollgate_quota_v1_GetUsageRequest__Output>
        GetUsageResponse: MessageTypeDefinition<_tollgate_quota_v1_GetUsageResponse, _tollgate_quota_v1_GetUsageResponse__Output>
        Lease: MessageTypeDefinition<_tollgate_quota_v1_Lease, _tollgate_quota_v1_Lease__Output>
        LeaseReturn: MessageTypeDefinition<_tollgate_quota_v1_LeaseReturn, _tollgate_quota_v1_LeaseReturn__Output>
        ListCreditMovementsRequest: MessageTypeDefinition<_tollgate_quota_v1_ListCreditMovementsRequest, _tollgate_quota_v1_ListCreditMovementsRequest__Output>
        ListCreditMovementsResponse: MessageTypeDefinition<_tollgate_quota_v1_ListCreditMovementsResponse, _tollgate_quota_v1_ListCreditMovementsResponse__Output>
        ListKeysRequest: MessageTypeDefinition<_tollgate_quota_v1_ListKeysRequest, _tollgate_quota_v1_ListKeysRequest__Output>
        ListKeysResponse: MessageTypeDefinition<_tollgate_quota_v1_ListKeysResponse, _tollgate_quota_v1_ListKeysResponse__Output>
        ListOwnKeysRequest: MessageTypeDefinition<_tollgate_quota_v1_ListOwnKeysRequest, _tollgate_quota_v1_ListOwnKeysRequest__Output>
        ListOwnKeysResponse: MessageTypeDefinition<_tollgate_quota_v1_ListOwnKeysResponse, _tollgate_quota_v1_ListOwnKeysResponse__Output>
        OpenCreditLease: MessageTypeDefinition<_tollgate_quota_v1_OpenCreditLease, _tollgate_quota_v1_OpenCreditLease__Output>
        Plan: MessageTypeDefinition<_tollgate_quota_v1_Plan, _tollgate_quota_v1_Plan__Output>
        Quota: MessageTypeDefinition<_tollgate_quota_v1_Quota, _tollgate_quota_v1_Quota__Output>
        /**
         * QuotaAdminService manages accounts and keys. Every call needs the operator token
         * in the `authorization: Bearer <token>` metadata.
         */
        QuotaAdminService: SubtypeConstructor<typeof grpc.Client, _tollgate_quota_v1_QuotaAdminServiceClient> & { service: _tollgate_quota_v1_QuotaAdminServiceDefinition }
        /**
         * QuotaMeterService meters API-key calls: key validation, subscription status, the
         * daily and monthly windows (UTC, account-wide) and the burst guard.
         */
        QuotaMeterService: SubtypeConstructor<typeof grpc.Client, _tollgate_quota_v1_QuotaMeterServiceClient> & { service: _tollgate_quota_v1_QuotaMeterServiceDefinition }
        ReplaceOwnKeyRequest: MessageTypeDefinition<_tollgate_quota_v1_ReplaceOwnKeyRequest, _tollgate_quota_v1_ReplaceOwnKeyRequest__Output>
        ReplaceOwnKeyResponse: MessageTypeDefinition<_tollgate_quota_v1_ReplaceOwnKeyResponse, _tollgate_quota_v1_ReplaceOwnKeyResponse__Output>
        ReportUsageRequest: MessageTypeDefinition<_tollgate_quota_v1_ReportUsageRequest, _tollgate_quota_v1_ReportUsageRequest__Output>
        ReportUsageResponse: MessageTypeDefinition<_tollgate_quota_v1_ReportUsageResponse, _tollgate_quota_v1_ReportUsageResponse__Output>
        ResolveWalletAccountRequest: MessageTypeDefinition<_tollgate_quota_v1_ResolveWalletAccountRequest, _tollgate_quota_v1_ResolveWalletAccountRequest__Output>
        ResolveWalletAccountResponse: MessageTypeDefinition<_tollgate_quota_v1_ResolveWalletAccountResponse, _tollgate_quota_v1_ResolveWalletAccountResponse__Output>
        RevokeKeyRequest: MessageTypeDefinition<_tollgate_quota_v1_RevokeKeyRequest, _tollgate_quota_v1_RevokeKeyRequest__Output>
        RevokeKeyResponse: MessageTypeDefinition<_tollgate_quota_v1_RevokeKeyResponse, _tollgate_quota_v1_RevokeKeyResponse__Output>
        RevokeOwnKeyRequest: MessageTypeDefinition<_tollgate_quota_v1_RevokeOwnKeyRequest, _tollgate_quota_v1_RevokeOwnKeyRequest__Output>
        RevokeOwnKeyResponse: MessageTypeDefinition<_tollgate_quota_v1_RevokeOwnKeyResponse, _tollgate_quota_v1_RevokeOwnKeyResponse__Output>
        UpdateAccountRequest: MessageTypeDefinition<_tollgate_quota_v1_UpdateAccountRequest, _tollgate_quota_v1_UpdateAccountRequest__Output>
        UpdateAccountResponse: MessageTypeDefinition<_tollgate_quota_v1_UpdateAccountResponse, _tollgate_quota_v1_UpdateAccountResponse__Output>
        UsageRecord: MessageTypeDefinition<_tollgate_quota_v1_UsageRecord, _tollgate_quota_v1_UsageRecord__Output>
      }
    }
  }
}

