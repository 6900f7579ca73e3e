import type * as grpc from '@grpc/grpc-js';
import type { EnumTypeDefinition, MessageTypeDefinition } from '@grpc/proto-loader';

import type { Account as _tollgate_quota_v1_Account, Account__Output as _tollgate_quota_v1_Account__Output } from './tollgate/quota/v1/Account.ts';
import type { ApiKey as _tollgate_quota_v1_ApiKey, ApiKey__Output as _tollgate_quota_v1_ApiKey__Output } from './tollgate/quota/v1/ApiKey.ts';
import type { AuthorizeRequest as _tollgate_quota_v1_AuthorizeRequest, AuthorizeRequest__Output as _tollgate_quota_v1_AuthorizeRequest__Output } from './tollgate/quota/v1/AuthorizeRequest.ts';
import type { AuthorizeResponse as _tollgate_quota_v1_AuthorizeResponse, AuthorizeResponse__Output as _tollgate_quota_v1_AuthorizeResponse__Output } from './tollgate/quota/v1/AuthorizeResponse.ts';
import type { CreateAccountRequest as _tollgate_quota_v1_CreateAccountRequest, CreateAccountRequest__Output as _tollgate_quota_v1_CreateAccountRequest__Output } from './tollgate/quota/v1/CreateAccountRequest.ts';
import type { CreateAccountResponse as _tollgate_quota_v1_CreateAccountResponse, CreateAccountResponse__Output as _tollgate_quota_v1_CreateAccountResponse__Output } from './tollgate/quota/v1/CreateAccountResponse.ts';
import type { CreateKeyRequest as _tollgate_quota_v1_CreateKeyRequest, CreateKeyRequest__Output as _tollgate_quota_v1_CreateKeyRequest__Output } from './tollgate/quota/v1/CreateKeyRequest.ts';
import type { CreateKeyResponse as _tollgate_quota_v1_CreateKeyResponse, CreateKeyResponse__Output as _tollgate_quota_v1_CreateKeyResponse__Output } from './tollgate/quota/v1/CreateKeyResponse.ts';
import type { DailyUsage as _tollgate_quota_v1_DailyUsage, DailyUsage__Output as _tollgate_quota_v1_DailyUsage__Output } from './tollgate/quota/v1/DailyUsage.ts';
import type { GetAccountRequest as _tollgate_quota_v1_GetAccountRequest, GetAccountRequest__Output as _tollgate_quota_v1_GetAccountRequest__Output } from './tollgate/quota/v1/GetAccountRequest.ts';
import type { GetAccountResponse as _tollgate_quota_v1_GetAccountResponse, GetAccountResponse__Output as _tollgate_quota_v1_GetAccountResponse__Output } from './tollgate/quota/v1/GetAccountResponse.ts';
import type { GetUsageRequest as _tollgate_quota_v1_GetUsageRequest, GetUsageRequest__Output as _tollgate_quota_v1_GetUsageRequest__Output } from './tollgate/quota/v1/GetUsageRequest.ts';
import type { GetUsageResponse as _tollgate_quota_v1_GetUsageResponse, GetUsageResponse__Output as _tollgate_quota_v1_GetUsageResponse__Output } from './tollgate/quota/v1/GetUsageResponse.ts';
import type { Lease as _tollgate_quota_v1_Lease, Lease__Output as _tollgate_quota_v1_Lease__Output } from './tollgate/quota/v1/Lease.ts';
import type { LeaseReturn as _tollgate_quota_v1_LeaseReturn, LeaseReturn__Output as _tollgate_quota_v1_LeaseReturn__Output } from './tollgate/quota/v1/LeaseReturn.ts';
import type { ListKeysRequest as _tollgate_quota_v1_ListKeysRequest, ListKeysRequest__Output as _tollgate_quota_v1_ListKeysRequest__Output } from './tollgate/quota/v1/ListKeysRequest.ts';
import type { ListKeysResponse as _tollgate_quota_v1_ListKeysResponse, ListKeysResponse__Output as _tollgate_quota_v1_ListKeysResponse__Output } from './tollgate/quota/v1/ListKeysResponse.ts';
import type { Quota as _tollgate_quota_v1_Quota, Quota__Output as _tollgate_quota_v1_Quota__Output } from './tollgate/quota/v1/Quota.ts';
import type { QuotaAdminServiceClient as _tollgate_quota_v1_QuotaAdminServiceClient, QuotaAdminServiceDefinition as _tollgate_quota_v1_QuotaAdminServiceDefinition } from './tollgate/quota/v1/QuotaAdminService.ts';
import type { QuotaMeterServiceClient as _tollgate_quota_v1_QuotaMeterServiceClient, QuotaMeterServiceDefinition as _tollgate_quota_v1_QuotaMeterServiceDefinition } from './tollgate/quota/v1/QuotaMeterService.ts';
import type { ReportUsageRequest as _tollgate_quota_v1_ReportUsageRequest, ReportUsageRequest__Output as _tollgate_quota_v1_ReportUsageRequest__Output } from './tollgate/quota/v1/ReportUsageRequest.ts';
import type { ReportUsageResponse as _tollgate_quota_v1_ReportUsageResponse, ReportUsageResponse__Output as _tollgate_quota_v1_ReportUsageResponse__Output } from './tollgate/quota/v1/ReportUsageResponse.ts';
import type { RevokeKeyRequest as _tollgate_quota_v1_RevokeKeyRequest, RevokeKeyRequest__Output as _tollgate_quota_v1_RevokeKeyRequest__Output } from './tollgate/quota/v1/RevokeKeyRequest.ts';
import type { RevokeKeyResponse as _tollgate_quota_v1_RevokeKeyResponse, RevokeKeyResponse__Output as _tollgate_quota_v1_RevokeKeyResponse__Output } from './tollgate/quota/v1/RevokeKeyResponse.ts';
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
        ApiKey: MessageTypeDefinition<_tollgate_quota_v1_ApiKey, _tollgate_quota_v1_ApiKey__Output>
        AuthorizeRequest: MessageTypeDefinition<_tollgate_quota_v1_AuthorizeRequest, _tollgate_quota_v1_AuthorizeRequest__Output>
        AuthorizeResponse: MessageTypeDefinition<_tollgate_quota_v1_AuthorizeResponse, _tollgate_quota_v1_AuthorizeResponse__Output>
        CreateAccountRequest: MessageTypeDefinition<_tollgate_quota_v1_CreateAccountRequest, _tollgate_quota_v1_CreateAccountRequest__Output>
        CreateAccountResponse: MessageTypeDefinition<_tollgate_quota_v1_CreateAccountResponse, _tollgate_quota_v1_CreateAccountResponse__Output>
        CreateKeyRequest: MessageTypeDefinition<_tollgate_quota_v1_CreateKeyRequest, _tollgate_quota_v1_CreateKeyRequest__Output>
        CreateKeyResponse: MessageTypeDefinition<_tollgate_quota_v1_CreateKeyResponse, _tollgate_quota_v1_CreateKeyResponse__Output>
        DailyUsage: MessageTypeDefinition<_tollgate_quota_v1_DailyUsage, _tollgate_quota_v1_DailyUsage__Output>
        Decision: EnumTypeDefinition
        GetAccountRequest: MessageTypeDefinition<_tollgate_quota_v1_GetAccountRequest, _tollgate_quota_v1_GetAccountRequest__Output>
        GetAccountResponse: MessageTypeDefinition<_tollgate_quota_v1_GetAccountResponse, _tollgate_quota_v1_GetAccountResponse__Output>
        GetUsageRequest: MessageTypeDefinition<_tollgate_quota_v1_GetUsageRequest, _tollgate_quota_v1_GetUsageRequest__Output>
        GetUsageResponse: MessageTypeDefinition<_tollgate_quota_v1_GetUsageResponse, _tollgate_quota_v1_GetUsageResponse__Output>
        Lease: MessageTypeDefinition<_tollgate_quota_v1_Lease, _tollgate_quota_v1_Lease__Output>
        LeaseReturn: MessageTypeDefinition<_tollgate_quota_v1_LeaseReturn, _tollgate_quota_v1_LeaseReturn__Output>
        ListKeysRequest: MessageTypeDefinition<_tollgate_quota_v1_ListKeysRequest, _tollgate_quota_v1_ListKeysRequest__Output>
        ListKeysResponse: MessageTypeDefinition<_tollgate_quota_v1_ListKeysResponse, _tollgate_quota_v1_ListKeysResponse__Output>
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
        ReportUsageRequest: MessageTypeDefinition<_tollgate_quota_v1_ReportUsageRequest, _tollgate_quota_v1_ReportUsageRequest__Output>
        ReportUsageResponse: MessageTypeDefinition<_tollgate_quota_v1_ReportUsageResponse, _tollgate_quota_v1_ReportUsageResponse__Output>
        RevokeKeyRequest: MessageTypeDefinition<_tollgate_quota_v1_RevokeKeyRequest, _tollgate_quota_v1_RevokeKeyRequest__Output>
        RevokeKeyResponse: MessageTypeDefinition<_tollgate_quota_v1_RevokeKeyResponse, _tollgate_quota_v1_RevokeKeyResponse__Output>
        UpdateAccountRequest: MessageTypeDefinition<_tollgate_quota_v1_UpdateAccountRequest, _tollgate_quota_v1_UpdateAccountRequest__Output>
        UpdateAccountResponse: MessageTypeDefinition<_tollgate_quota_v1_UpdateAccountResponse, _tollgate_quota_v1_UpdateAccountResponse__Output>
        UsageRecord: MessageTypeDefinition<_tollgate_quota_v1_UsageRecord, _tollgate_quota_v1_UsageRecord__Output>
      }
    }
  }
}

