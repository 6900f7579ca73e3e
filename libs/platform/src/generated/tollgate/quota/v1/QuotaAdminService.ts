// Original file: ../../proto/tollgate/quota/v1/quota_meter.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { AdjustCreditsRequest as _tollgate_quota_v1_AdjustCreditsRequest, AdjustCreditsRequest__Output as _tollgate_quota_v1_AdjustCreditsRequest__Output } from '../../../tollgate/quota/v1/AdjustCreditsRequest.ts';
import type { AdjustCreditsResponse as _tollgate_quota_v1_AdjustCreditsResponse, AdjustCreditsResponse__Output as _tollgate_quota_v1_AdjustCreditsResponse__Output } from '../../../tollgate/quota/v1/AdjustCreditsResponse.ts';
import type { CreateAccountRequest as _tollgate_quota_v1_CreateAccountRequest, CreateAccountRequest__Output as _tollgate_quota_v1_CreateAccountRequest__Output } from '../../../tollgate/quota/v1/CreateAccountRequest.ts';
import type { CreateAccountResponse as _tollgate_quota_v1_CreateAccountResponse, CreateAccountResponse__Output as _tollgate_quota_v1_CreateAccountResponse__Output } from '../../../tollgate/quota/v1/CreateAccountResponse.ts';
import type { CreateKeyRequest as _tollgate_quota_v1_CreateKeyRequest, CreateKeyRequest__Output as _tollgate_quota_v1_CreateKeyRequest__Output } from '../../../tollgate/quota/v1/CreateKeyRequest.ts';
import type { CreateKeyResponse as _tollgate_quota_v1_CreateKeyResponse, CreateKeyResponse__Output as _tollgate_quota_v1_CreateKeyResponse__Output } from '../../../tollgate/quota/v1/CreateKeyResponse.ts';
import type { GetAccountRequest as _tollgate_quota_v1_GetAccountRequest, GetAccountRequest__Output as _tollgate_quota_v1_GetAccountRequest__Output } from '../../../tollgate/quota/v1/GetAccountRequest.ts';
import type { GetAccountResponse as _tollgate_quota_v1_GetAccountResponse, GetAccountResponse__Output as _tollgate_quota_v1_GetAccountResponse__Output } from '../../../tollgate/quota/v1/GetAccountResponse.ts';
import type { ListCreditMovementsRequest as _tollgate_quota_v1_ListCreditMovementsRequest, ListCreditMovementsRequest__Output as _tollgate_quota_v1_ListCreditMovementsRequest__Output } from '../../../tollgate/quota/v1/ListCreditMovementsRequest.ts';
import type { ListCreditMovementsResponse as _tollgate_quota_v1_ListCreditMovementsResponse, ListCreditMovementsResponse__Output as _tollgate_quota_v1_ListCreditMovementsResponse__Output } from '../../../tollgate/quota/v1/ListCreditMovementsResponse.ts';
import type { ListKeysRequest as _tollgate_quota_v1_ListKeysRequest, ListKeysRequest__Output as _tollgate_quota_v1_ListKeysRequest__Output } from '../../../tollgate/quota/v1/ListKeysRequest.ts';
import type { ListKeysResponse as _tollgate_quota_v1_ListKeysResponse, ListKeysResponse__Output as _tollgate_quota_v1_ListKeysResponse__Output } from '../../../tollgate/quota/v1/ListKeysResponse.ts';
import type { RevokeKeyRequest as _tollgate_quota_v1_RevokeKeyRequest, RevokeKeyRequest__Output as _tollgate_quota_v1_RevokeKeyRequest__Output } from '../../../tollgate/quota/v1/RevokeKeyRequest.ts';
import type { RevokeKeyResponse as _tollgate_quota_v1_RevokeKeyResponse, RevokeKeyResponse__Output as _tollgate_quota_v1_RevokeKeyResponse__Output } from '../../../tollgate/quota/v1/RevokeKeyResponse.ts';
import type { UpdateAccountRequest as _tollgate_quota_v1_UpdateAccountRequest, UpdateAccountRequest__Output as _tollgate_quota_v1_UpdateAccountRequest__Output } from '../../../tollgate/quota/v1/UpdateAccountRequest.ts';
import type { UpdateAccountResponse as _tollgate_quota_v1_UpdateAccountResponse, UpdateAccountResponse__Output as _tollgate_quota_v1_UpdateAccountResponse__Output } from '../../../tollgate/quota/v1/UpdateAccountResponse.ts';

/**
 * QuotaAdminService manages accounts and keys. Every call needs the operator token
 * in the `authorization: Bearer <token>` metadata.
 */
export interface QuotaAdminServiceClient extends grpc.Client {
  /**
   * An operator's correction of an account's credits (a refund, a promotion, a correction after an
   * incident): an audited ledger entry (who, why, when), applied once per adjustment id.
   */
  AdjustCredits(argument: _tollgate_quota_v1_AdjustCreditsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_AdjustCreditsResponse__Output>): grpc.ClientUnaryCall;
  AdjustCredits(argument: _tollgate_quota_v1_AdjustCreditsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_quota_v1_AdjustCreditsResponse__Output>): grpc.ClientUnaryCall;
  AdjustCredits(argument: _tollgate_quota_v1_AdjustCreditsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_AdjustCreditsResponse__Output>): grpc.ClientUnaryCall;
  AdjustCredits(argument: _tollgate_quota_v1_AdjustCreditsRequest, callback: grpc.requestCallback<_tollgate_quota_v1_AdjustCreditsResponse__Output>): grpc.ClientUnaryCall;
  /**
   * An operator's correction of an account's credits (a refund, a promotion, a correction after an
   * incident): an audited ledger entry (who, why, when), applied once per adjustment id.
   */
  adjustCredits(argument: _tollgate_quota_v1_AdjustCreditsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_AdjustCreditsResponse__Output>): grpc.ClientUnaryCall;
  adjustCredits(argument: _tollgate_quota_v1_AdjustCreditsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_quota_v1_AdjustCreditsResponse__Output>): grpc.ClientUnaryCall;
  adjustCredits(argument: _tollgate_quota_v1_AdjustCreditsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_AdjustCreditsResponse__Output>): grpc.ClientUnaryCall;
  adjustCredits(argument: _tollgate_quota_v1_AdjustCreditsRequest, callback: grpc.requestCallback<_tollgate_quota_v1_AdjustCreditsResponse__Output>): grpc.ClientUnaryCall;
  
  CreateAccount(argument: _tollgate_quota_v1_CreateAccountRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_CreateAccountResponse__Output>): grpc.ClientUnaryCall;
  CreateAccount(argument: _tollgate_quota_v1_CreateAccountRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_quota_v1_CreateAccountResponse__Output>): grpc.ClientUnaryCall;
  CreateAccount(argument: _tollgate_quota_v1_CreateAccountRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_CreateAccountResponse__Output>): grpc.ClientUnaryCall;
  CreateAccount(argument: _tollgate_quota_v1_CreateAccountRequest, callback: grpc.requestCallback<_tollgate_quota_v1_CreateAccountResponse__Output>): grpc.ClientUnaryCall;
  createAccount(argument: _tollgate_quota_v1_CreateAccountRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_CreateAccountResponse__Output>): grpc.ClientUnaryCall;
  createAccount(argument: _tollgate_quota_v1_CreateAccountRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_quota_v1_CreateAccountResponse__Output>): grpc.ClientUnaryCall;
  createAccount(argument: _tollgate_quota_v1_CreateAccountRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_CreateAccountResponse__Output>): grpc.ClientUnaryCall;
  createAccount(argument: _tollgate_quota_v1_CreateAccountRequest, callback: grpc.requestCallback<_tollgate_quota_v1_CreateAccountResponse__Output>): grpc.ClientUnaryCall;
  
  CreateKey(argument: _tollgate_quota_v1_CreateKeyRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_CreateKeyResponse__Output>): grpc.ClientUnaryCall;
  CreateKey(argument: _tollgate_quota_v1_CreateKeyRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_quota_v1_CreateKeyResponse__Output>): grpc.ClientUnaryCall;
  CreateKey(argument: _tollgate_quota_v1_CreateKeyRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_CreateKeyResponse__Output>): grpc.ClientUnaryCall;
  CreateKey(argument: _tollgate_quota_v1_CreateKeyRequest, callback: grpc.requestCallback<_tollgate_quota_v1_CreateKeyResponse__Output>): grpc.ClientUnaryCall;
  createKey(argument: _tollgate_quota_v1_CreateKeyRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_CreateKeyResponse__Output>): grpc.ClientUnaryCall;
  createKey(argument: _tollgate_quota_v1_CreateKeyRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_quota_v1_CreateKeyResponse__Output>): grpc.ClientUnaryCall;
  createKey(argument: _tollgate_quota_v1_CreateKeyRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_CreateKeyResponse__Output>): grpc.ClientUnaryCall;
  createKey(argument: _tollgate_quota_v1_CreateKeyRequest, callback: grpc.requestCallback<_tollgate_quota_v1_CreateKeyResponse__Output>): grpc.ClientUnaryCall;
  
  GetAccount(argument: _tollgate_quota_v1_GetAccountRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_GetAccountResponse__Output>): grpc.ClientUnaryCall;
  GetAccount(argument: _tollgate_quota_v1_GetAccountRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_quota_v1_GetAccountResponse__Output>): grpc.ClientUnaryCall;
  GetAccount(argument: _tollgate_quota_v1_GetAccountRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_GetAccountResponse__Output>): grpc.ClientUnaryCall;
  GetAccount(argument: _tollgate_quota_v1_GetAccountRequest, callback: grpc.requestCallback<_tollgate_quota_v1_GetAccountResponse__Output>): grpc.ClientUnaryCall;
  getAccount(argument: _tollgate_quota_v1_GetAccountRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_GetAccountResponse__Output>): grpc.ClientUnaryCall;
  getAccount(argument: _tollgate_quota_v1_GetAccountRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_quota_v1_GetAccountResponse__Output>): grpc.ClientUnaryCall;
  getAccount(argument: _tollgate_quota_v1_GetAccountRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_GetAccountResponse__Output>): grpc.ClientUnaryCall;
  getAccount(argument: _tollgate_quota_v1_GetAccountRequest, callback: grpc.requestCallback<_tollgate_quota_v1_GetAccountResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * An account's credit movements: top-ups and adjustments one by one, draws summed by UTC day.
   */
  ListCreditMovements(argument: _tollgate_quota_v1_ListCreditMovementsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_ListCreditMovementsResponse__Output>): grpc.ClientUnaryCall;
  ListCreditMovements(argument: _tollgate_quota_v1_ListCreditMovementsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_quota_v1_ListCreditMovementsResponse__Output>): grpc.ClientUnaryCall;
  ListCreditMovements(argument: _tollgate_quota_v1_ListCreditMovementsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_ListCreditMovementsResponse__Output>): grpc.ClientUnaryCall;
  ListCreditMovements(argument: _tollgate_quota_v1_ListCreditMovementsRequest, callback: grpc.requestCallback<_tollgate_quota_v1_ListCreditMovementsResponse__Output>): grpc.ClientUnaryCall;
  /**
   * An account's credit movements: top-ups and adjustments one by one, draws summed by UTC day.
   */
  listCreditMovements(argument: _tollgate_quota_v1_ListCreditMovementsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_ListCreditMovementsResponse__Output>): grpc.ClientUnaryCall;
  listCreditMovements(argument: _tollgate_quota_v1_ListCreditMovementsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_quota_v1_ListCreditMovementsResponse__Output>): grpc.ClientUnaryCall;
  listCreditMovements(argument: _tollgate_quota_v1_ListCreditMovementsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_ListCreditMovementsResponse__Output>): grpc.ClientUnaryCall;
  listCreditMovements(argument: _tollgate_quota_v1_ListCreditMovementsRequest, callback: grpc.requestCallback<_tollgate_quota_v1_ListCreditMovementsResponse__Output>): grpc.ClientUnaryCall;
  
  ListKeys(argument: _tollgate_quota_v1_ListKeysRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_ListKeysResponse__Output>): grpc.ClientUnaryCall;
  ListKeys(argument: _tollgate_quota_v1_ListKeysRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_quota_v1_ListKeysResponse__Output>): grpc.ClientUnaryCall;
  ListKeys(argument: _tollgate_quota_v1_ListKeysRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_ListKeysResponse__Output>): grpc.ClientUnaryCall;
  ListKeys(argument: _tollgate_quota_v1_ListKeysRequest, callback: grpc.requestCallback<_tollgate_quota_v1_ListKeysResponse__Output>): grpc.ClientUnaryCall;
  listKeys(argument: _tollgate_quota_v1_ListKeysRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_ListKeysResponse__Output>): grpc.ClientUnaryCall;
  listKeys(argument: _tollgate_quota_v1_ListKeysRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_quota_v1_ListKeysResponse__Output>): grpc.ClientUnaryCall;
  listKeys(argument: _tollgate_quota_v1_ListKeysRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_ListKeysResponse__Output>): grpc.ClientUnaryCall;
  listKeys(argument: _tollgate_quota_v1_ListKeysRequest, callback: grpc.requestCallback<_tollgate_quota_v1_ListKeysResponse__Output>): grpc.ClientUnaryCall;
  
  RevokeKey(argument: _tollgate_quota_v1_RevokeKeyRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_RevokeKeyResponse__Output>): grpc.ClientUnaryCall;
  RevokeKey(argument: _tollgate_quota_v1_RevokeKeyRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_quota_v1_RevokeKeyResponse__Output>): grpc.ClientUnaryCall;
  RevokeKey(argument: _tollgate_quota_v1_RevokeKeyRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_RevokeKeyResponse__Output>): grpc.ClientUnaryCall;
  RevokeKey(argument: _tollgate_quota_v1_RevokeKeyRequest, callback: grpc.requestCallback<_tollgate_quota_v1_RevokeKeyResponse__Output>): grpc.ClientUnaryCall;
  revokeKey(argument: _tollgate_quota_v1_RevokeKeyRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_RevokeKeyResponse__Output>): grpc.ClientUnaryCall;
  revokeKey(argument: _tollgate_quota_v1_RevokeKeyRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_quota_v1_RevokeKeyResponse__Output>): grpc.ClientUnaryCall;
  revokeKey(argument: _tollgate_quota_v1_RevokeKeyRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_RevokeKeyResponse__Output>): grpc.ClientUnaryCall;
  revokeKey(argument: _tollgate_quota_v1_RevokeKeyRequest, callback: grpc.requestCallback<_tollgate_quota_v1_RevokeKeyResponse__Output>): grpc.ClientUnaryCall;
  
  UpdateAccount(argument: _tollgate_quota_v1_UpdateAccountRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_UpdateAccountResponse__Output>): grpc.ClientUnaryCall;
  UpdateAccount(argument: _tollgate_quota_v1_UpdateAccountRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_quota_v1_UpdateAccountResponse__Output>): grpc.ClientUnaryCall;
  UpdateAccount(argument: _tollgate_quota_v1_UpdateAccountRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_UpdateAccountResponse__Output>): grpc.ClientUnaryCall;
  UpdateAccount(argument: _tollgate_quota_v1_UpdateAccountRequest, callback: grpc.requestCallback<_tollgate_quota_v1_UpdateAccountResponse__Output>): grpc.ClientUnaryCall;
  updateAccount(argument: _tollgate_quota_v1_UpdateAccountRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_UpdateAccountResponse__Output>): grpc.ClientUnaryCall;
  updateAccount(argument: _tollgate_quota_v1_UpdateAccountRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_quota_v1_UpdateAccountResponse__Output>): grpc.ClientUnaryCall;
  updateAccount(argument: _tollgate_quota_v1_UpdateAccountRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_UpdateAccountResponse__Output>): grpc.ClientUnaryCall;
  updateAccount(argument: _tollgate_quota_v1_UpdateAccountRequest, callback: grpc.requestCallback<_tollgate_quota_v1_UpdateAccountResponse__Output>): grpc.ClientUnaryCall;
  
}

/**
 * QuotaAdminService manages accounts and keys. Every call needs the operator token
 * in the `authorization: Bearer <token>` metadata.
 */
export interface QuotaAdminServiceHandlers extends grpc.UntypedServiceImplementation {
  /**
   * An operator's correction of an account's credits (a refund, a promotion, a correction after an
   * incident): an audited ledger entry (who, why, when), applied once per adjustment id.
   */
  AdjustCredits: grpc.handleUnaryCall<_tollgate_quota_v1_AdjustCreditsRequest__Output, _tollgate_quota_v1_AdjustCreditsResponse>;
  
  CreateAccount: grpc.handleUnaryCall<_tollgate_quota_v1_CreateAccountRequest__Output, _tollgate_quota_v1_CreateAccountResponse>;
  
  CreateKey: grpc.handleUnaryCall<_tollgate_quota_v1_CreateKeyRequest__Output, _tollgate_quota_v1_CreateKeyResponse>;
  
  GetAccount: grpc.handleUnaryCall<_tollgate_quota_v1_GetAccountRequest__Output, _tollgate_quota_v1_GetAccountResponse>;
  
  /**
   * An account's credit movements: top-ups and adjustments one by one, draws summed by UTC day.
   */
  ListCreditMovements: grpc.handleUnaryCall<_tollgate_quota_v1_ListCreditMovementsRequest__Output, _tollgate_quota_v1_ListCreditMovementsResponse>;
  
  ListKeys: grpc.handleUnaryCall<_tollgate_quota_v1_ListKeysRequest__Output, _tollgate_quota_v1_ListKeysResponse>;
  
  RevokeKey: grpc.handleUnaryCall<_tollgate_quota_v1_RevokeKeyRequest__Output, _tollgate_quota_v1_RevokeKeyResponse>;
  
  UpdateAccount: grpc.handleUnaryCall<_tollgate_quota_v1_UpdateAccountRequest__Output, _tollgate_quota_v1_UpdateAccountResponse>;
  
}

export interface QuotaAdminServiceDefinition extends grpc.ServiceDefinition {
  AdjustCredits: MethodDefinition<_tollgate_quota_v1_AdjustCreditsRequest, _tollgate_quota_v1_AdjustCreditsResponse, _tollgate_quota_v1_AdjustCreditsRequest__Output, _tollgate_quota_v1_AdjustCreditsResponse__Output>
  CreateAccount: MethodDefinition<_tollgate_quota_v1_CreateAccountRequest, _tollgate_quota_v1_CreateAccountResponse, _tollgate_quota_v1_CreateAccountRequest__Output, _tollgate_quota_v1_CreateAccountResponse__Output>
  CreateKey: MethodDefinition<_tollgate_quota_v1_CreateKeyRequest, _tollgate_quota_v1_CreateKeyResponse, _tollgate_quota_v1_CreateKeyRequest__Output, _tollgate_quota_v1_CreateKeyResponse__Output>
  GetAccount: MethodDefinition<_tollgate_quota_v1_GetAccountRequest, _tollgate_quota_v1_GetAccountResponse, _tollgate_quota_v1_GetAccountRequest__Output, _tollgate_quota_v1_GetAccountResponse__Output>
  ListCreditMovements: MethodDefinition<_tollgate_quota_v1_ListCreditMovementsRequest, _tollgate_quota_v1_ListCreditMovementsResponse, _tollgate_quota_v1_ListCreditMovementsRequest__Output, _tollgate_quota_v1_ListCreditMovementsResponse__Output>
  ListKeys: MethodDefinition<_tollgate_quota_v1_ListKeysRequest, _tollgate_quota_v1_ListKeysResponse, _tollgate_quota_v1_ListKeysRequest__Output, _tollgate_quota_v1_ListKeysResponse__Output>
  RevokeKey: MethodDefinition<_tollgate_quota_v1_RevokeKeyRequest, _tollgate_quota_v1_RevokeKeyResponse, _tollgate_quota_v1_RevokeKeyRequest__Output, _tollgate_quota_v1_RevokeKeyResponse__Output>
  UpdateAccount: MethodDefinition<_tollgate_quota_v1_UpdateAccountRequest, _tollgate_quota_v1_UpdateAccountResponse, _tollgate_quota_v1_UpdateAccountRequest__Output, _tollgate_quota_v1_UpdateAccountResponse__Output>
}
