// Original file: ../../proto/tollgate/quota/v1/quota_meter.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { CreateOwnKeyRequest as _tollgate_quota_v1_CreateOwnKeyRequest, CreateOwnKeyRequest__Output as _tollgate_quota_v1_CreateOwnKeyRequest__Output } from '../../../tollgate/quota/v1/CreateOwnKeyRequest.ts';
import type { CreateOwnKeyResponse as _tollgate_quota_v1_CreateOwnKeyResponse, CreateOwnKeyResponse__Output as _tollgate_quota_v1_CreateOwnKeyResponse__Output } from '../../../tollgate/quota/v1/CreateOwnKeyResponse.ts';
import type { GetOwnCreditsRequest as _tollgate_quota_v1_GetOwnCreditsRequest, GetOwnCreditsRequest__Output as _tollgate_quota_v1_GetOwnCreditsRequest__Output } from '../../../tollgate/quota/v1/GetOwnCreditsRequest.ts';
import type { GetOwnCreditsResponse as _tollgate_quota_v1_GetOwnCreditsResponse, GetOwnCreditsResponse__Output as _tollgate_quota_v1_GetOwnCreditsResponse__Output } from '../../../tollgate/quota/v1/GetOwnCreditsResponse.ts';
import type { GetOwnUsageRequest as _tollgate_quota_v1_GetOwnUsageRequest, GetOwnUsageRequest__Output as _tollgate_quota_v1_GetOwnUsageRequest__Output } from '../../../tollgate/quota/v1/GetOwnUsageRequest.ts';
import type { GetOwnUsageResponse as _tollgate_quota_v1_GetOwnUsageResponse, GetOwnUsageResponse__Output as _tollgate_quota_v1_GetOwnUsageResponse__Output } from '../../../tollgate/quota/v1/GetOwnUsageResponse.ts';
import type { ListOwnKeysRequest as _tollgate_quota_v1_ListOwnKeysRequest, ListOwnKeysRequest__Output as _tollgate_quota_v1_ListOwnKeysRequest__Output } from '../../../tollgate/quota/v1/ListOwnKeysRequest.ts';
import type { ListOwnKeysResponse as _tollgate_quota_v1_ListOwnKeysResponse, ListOwnKeysResponse__Output as _tollgate_quota_v1_ListOwnKeysResponse__Output } from '../../../tollgate/quota/v1/ListOwnKeysResponse.ts';
import type { ReplaceOwnKeyRequest as _tollgate_quota_v1_ReplaceOwnKeyRequest, ReplaceOwnKeyRequest__Output as _tollgate_quota_v1_ReplaceOwnKeyRequest__Output } from '../../../tollgate/quota/v1/ReplaceOwnKeyRequest.ts';
import type { ReplaceOwnKeyResponse as _tollgate_quota_v1_ReplaceOwnKeyResponse, ReplaceOwnKeyResponse__Output as _tollgate_quota_v1_ReplaceOwnKeyResponse__Output } from '../../../tollgate/quota/v1/ReplaceOwnKeyResponse.ts';
import type { ResolveWalletAccountRequest as _tollgate_quota_v1_ResolveWalletAccountRequest, ResolveWalletAccountRequest__Output as _tollgate_quota_v1_ResolveWalletAccountRequest__Output } from '../../../tollgate/quota/v1/ResolveWalletAccountRequest.ts';
import type { ResolveWalletAccountResponse as _tollgate_quota_v1_ResolveWalletAccountResponse, ResolveWalletAccountResponse__Output as _tollgate_quota_v1_ResolveWalletAccountResponse__Output } from '../../../tollgate/quota/v1/ResolveWalletAccountResponse.ts';
import type { RevokeOwnKeyRequest as _tollgate_quota_v1_RevokeOwnKeyRequest, RevokeOwnKeyRequest__Output as _tollgate_quota_v1_RevokeOwnKeyRequest__Output } from '../../../tollgate/quota/v1/RevokeOwnKeyRequest.ts';
import type { RevokeOwnKeyResponse as _tollgate_quota_v1_RevokeOwnKeyResponse, RevokeOwnKeyResponse__Output as _tollgate_quota_v1_RevokeOwnKeyResponse__Output } from '../../../tollgate/quota/v1/RevokeOwnKeyResponse.ts';

/**
 * AccountService is what a signed-in user may do to their own account, called by the dashboard
 * (mesh caller "dashboard") after it verified the user's wallet signature (EIP-4361). Every
 * method but ResolveWalletAccount names the account; quota-meter answers only about that account's
 * own keys (a key of another account is NOT_FOUND, as if it did not exist). The operator token is
 * never involved.
 */
export interface AccountServiceClient extends grpc.Client {
  /**
   * CreateOwnKey returns the key itself once; it is never stored or shown again.
   */
  CreateOwnKey(argument: _tollgate_quota_v1_CreateOwnKeyRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_CreateOwnKeyResponse__Output>): grpc.ClientUnaryCall;
  CreateOwnKey(argument: _tollgate_quota_v1_CreateOwnKeyRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_quota_v1_CreateOwnKeyResponse__Output>): grpc.ClientUnaryCall;
  CreateOwnKey(argument: _tollgate_quota_v1_CreateOwnKeyRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_CreateOwnKeyResponse__Output>): grpc.ClientUnaryCall;
  CreateOwnKey(argument: _tollgate_quota_v1_CreateOwnKeyRequest, callback: grpc.requestCallback<_tollgate_quota_v1_CreateOwnKeyResponse__Output>): grpc.ClientUnaryCall;
  /**
   * CreateOwnKey returns the key itself once; it is never stored or shown again.
   */
  createOwnKey(argument: _tollgate_quota_v1_CreateOwnKeyRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_CreateOwnKeyResponse__Output>): grpc.ClientUnaryCall;
  createOwnKey(argument: _tollgate_quota_v1_CreateOwnKeyRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_quota_v1_CreateOwnKeyResponse__Output>): grpc.ClientUnaryCall;
  createOwnKey(argument: _tollgate_quota_v1_CreateOwnKeyRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_CreateOwnKeyResponse__Output>): grpc.ClientUnaryCall;
  createOwnKey(argument: _tollgate_quota_v1_CreateOwnKeyRequest, callback: grpc.requestCallback<_tollgate_quota_v1_CreateOwnKeyResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * GetOwnCredits: the account's credit balance and its ledger by UTC day (top-ups, draws, refunds).
   */
  GetOwnCredits(argument: _tollgate_quota_v1_GetOwnCreditsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_GetOwnCreditsResponse__Output>): grpc.ClientUnaryCall;
  GetOwnCredits(argument: _tollgate_quota_v1_GetOwnCreditsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_quota_v1_GetOwnCreditsResponse__Output>): grpc.ClientUnaryCall;
  GetOwnCredits(argument: _tollgate_quota_v1_GetOwnCreditsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_GetOwnCreditsResponse__Output>): grpc.ClientUnaryCall;
  GetOwnCredits(argument: _tollgate_quota_v1_GetOwnCreditsRequest, callback: grpc.requestCallback<_tollgate_quota_v1_GetOwnCreditsResponse__Output>): grpc.ClientUnaryCall;
  /**
   * GetOwnCredits: the account's credit balance and its ledger by UTC day (top-ups, draws, refunds).
   */
  getOwnCredits(argument: _tollgate_quota_v1_GetOwnCreditsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_GetOwnCreditsResponse__Output>): grpc.ClientUnaryCall;
  getOwnCredits(argument: _tollgate_quota_v1_GetOwnCreditsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_quota_v1_GetOwnCreditsResponse__Output>): grpc.ClientUnaryCall;
  getOwnCredits(argument: _tollgate_quota_v1_GetOwnCreditsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_GetOwnCreditsResponse__Output>): grpc.ClientUnaryCall;
  getOwnCredits(argument: _tollgate_quota_v1_GetOwnCreditsRequest, callback: grpc.requestCallback<_tollgate_quota_v1_GetOwnCreditsResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * GetOwnUsage: the plan as enforced, today's and this month's counts as the windows hold them
   * (the X-Quota-* numbers) and per-day calls and errors from the usage rollups.
   */
  GetOwnUsage(argument: _tollgate_quota_v1_GetOwnUsageRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_GetOwnUsageResponse__Output>): grpc.ClientUnaryCall;
  GetOwnUsage(argument: _tollgate_quota_v1_GetOwnUsageRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_quota_v1_GetOwnUsageResponse__Output>): grpc.ClientUnaryCall;
  GetOwnUsage(argument: _tollgate_quota_v1_GetOwnUsageRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_GetOwnUsageResponse__Output>): grpc.ClientUnaryCall;
  GetOwnUsage(argument: _tollgate_quota_v1_GetOwnUsageRequest, callback: grpc.requestCallback<_tollgate_quota_v1_GetOwnUsageResponse__Output>): grpc.ClientUnaryCall;
  /**
   * GetOwnUsage: the plan as enforced, today's and this month's counts as the windows hold them
   * (the X-Quota-* numbers) and per-day calls and errors from the usage rollups.
   */
  getOwnUsage(argument: _tollgate_quota_v1_GetOwnUsageRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_GetOwnUsageResponse__Output>): grpc.ClientUnaryCall;
  getOwnUsage(argument: _tollgate_quota_v1_GetOwnUsageRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_quota_v1_GetOwnUsageResponse__Output>): grpc.ClientUnaryCall;
  getOwnUsage(argument: _tollgate_quota_v1_GetOwnUsageRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_GetOwnUsageResponse__Output>): grpc.ClientUnaryCall;
  getOwnUsage(argument: _tollgate_quota_v1_GetOwnUsageRequest, callback: grpc.requestCallback<_tollgate_quota_v1_GetOwnUsageResponse__Output>): grpc.ClientUnaryCall;
  
  ListOwnKeys(argument: _tollgate_quota_v1_ListOwnKeysRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_ListOwnKeysResponse__Output>): grpc.ClientUnaryCall;
  ListOwnKeys(argument: _tollgate_quota_v1_ListOwnKeysRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_quota_v1_ListOwnKeysResponse__Output>): grpc.ClientUnaryCall;
  ListOwnKeys(argument: _tollgate_quota_v1_ListOwnKeysRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_ListOwnKeysResponse__Output>): grpc.ClientUnaryCall;
  ListOwnKeys(argument: _tollgate_quota_v1_ListOwnKeysRequest, callback: grpc.requestCallback<_tollgate_quota_v1_ListOwnKeysResponse__Output>): grpc.ClientUnaryCall;
  listOwnKeys(argument: _tollgate_quota_v1_ListOwnKeysRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_ListOwnKeysResponse__Output>): grpc.ClientUnaryCall;
  listOwnKeys(argument: _tollgate_quota_v1_ListOwnKeysRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_quota_v1_ListOwnKeysResponse__Output>): grpc.ClientUnaryCall;
  listOwnKeys(argument: _tollgate_quota_v1_ListOwnKeysRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_ListOwnKeysResponse__Output>): grpc.ClientUnaryCall;
  listOwnKeys(argument: _tollgate_quota_v1_ListOwnKeysRequest, callback: grpc.requestCallback<_tollgate_quota_v1_ListOwnKeysResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * ReplaceOwnKey creates a new key, then revokes the old one (spec 5.4: a lost key is replaced).
   */
  ReplaceOwnKey(argument: _tollgate_quota_v1_ReplaceOwnKeyRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_ReplaceOwnKeyResponse__Output>): grpc.ClientUnaryCall;
  ReplaceOwnKey(argument: _tollgate_quota_v1_ReplaceOwnKeyRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_quota_v1_ReplaceOwnKeyResponse__Output>): grpc.ClientUnaryCall;
  ReplaceOwnKey(argument: _tollgate_quota_v1_ReplaceOwnKeyRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_ReplaceOwnKeyResponse__Output>): grpc.ClientUnaryCall;
  ReplaceOwnKey(argument: _tollgate_quota_v1_ReplaceOwnKeyRequest, callback: grpc.requestCallback<_tollgate_quota_v1_ReplaceOwnKeyResponse__Output>): grpc.ClientUnaryCall;
  /**
   * ReplaceOwnKey creates a new key, then revokes the old one (spec 5.4: a lost key is replaced).
   */
  replaceOwnKey(argument: _tollgate_quota_v1_ReplaceOwnKeyRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_ReplaceOwnKeyResponse__Output>): grpc.ClientUnaryCall;
  replaceOwnKey(argument: _tollgate_quota_v1_ReplaceOwnKeyRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_quota_v1_ReplaceOwnKeyResponse__Output>): grpc.ClientUnaryCall;
  replaceOwnKey(argument: _tollgate_quota_v1_ReplaceOwnKeyRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_ReplaceOwnKeyResponse__Output>): grpc.ClientUnaryCall;
  replaceOwnKey(argument: _tollgate_quota_v1_ReplaceOwnKeyRequest, callback: grpc.requestCallback<_tollgate_quota_v1_ReplaceOwnKeyResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * ResolveWalletAccount finds the account bound to a wallet address, creating it on the free
   * plan when `create` is set and there is none (the first sign-in).
   */
  ResolveWalletAccount(argument: _tollgate_quota_v1_ResolveWalletAccountRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_ResolveWalletAccountResponse__Output>): grpc.ClientUnaryCall;
  ResolveWalletAccount(argument: _tollgate_quota_v1_ResolveWalletAccountRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_quota_v1_ResolveWalletAccountResponse__Output>): grpc.ClientUnaryCall;
  ResolveWalletAccount(argument: _tollgate_quota_v1_ResolveWalletAccountRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_ResolveWalletAccountResponse__Output>): grpc.ClientUnaryCall;
  ResolveWalletAccount(argument: _tollgate_quota_v1_ResolveWalletAccountRequest, callback: grpc.requestCallback<_tollgate_quota_v1_ResolveWalletAccountResponse__Output>): grpc.ClientUnaryCall;
  /**
   * ResolveWalletAccount finds the account bound to a wallet address, creating it on the free
   * plan when `create` is set and there is none (the first sign-in).
   */
  resolveWalletAccount(argument: _tollgate_quota_v1_ResolveWalletAccountRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_ResolveWalletAccountResponse__Output>): grpc.ClientUnaryCall;
  resolveWalletAccount(argument: _tollgate_quota_v1_ResolveWalletAccountRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_quota_v1_ResolveWalletAccountResponse__Output>): grpc.ClientUnaryCall;
  resolveWalletAccount(argument: _tollgate_quota_v1_ResolveWalletAccountRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_ResolveWalletAccountResponse__Output>): grpc.ClientUnaryCall;
  resolveWalletAccount(argument: _tollgate_quota_v1_ResolveWalletAccountRequest, callback: grpc.requestCallback<_tollgate_quota_v1_ResolveWalletAccountResponse__Output>): grpc.ClientUnaryCall;
  
  RevokeOwnKey(argument: _tollgate_quota_v1_RevokeOwnKeyRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_RevokeOwnKeyResponse__Output>): grpc.ClientUnaryCall;
  RevokeOwnKey(argument: _tollgate_quota_v1_RevokeOwnKeyRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_quota_v1_RevokeOwnKeyResponse__Output>): grpc.ClientUnaryCall;
  RevokeOwnKey(argument: _tollgate_quota_v1_RevokeOwnKeyRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_RevokeOwnKeyResponse__Output>): grpc.ClientUnaryCall;
  RevokeOwnKey(argument: _tollgate_quota_v1_RevokeOwnKeyRequest, callback: grpc.requestCallback<_tollgate_quota_v1_RevokeOwnKeyResponse__Output>): grpc.ClientUnaryCall;
  revokeOwnKey(argument: _tollgate_quota_v1_RevokeOwnKeyRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_RevokeOwnKeyResponse__Output>): grpc.ClientUnaryCall;
  revokeOwnKey(argument: _tollgate_quota_v1_RevokeOwnKeyRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_quota_v1_RevokeOwnKeyResponse__Output>): grpc.ClientUnaryCall;
  revokeOwnKey(argument: _tollgate_quota_v1_RevokeOwnKeyRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_RevokeOwnKeyResponse__Output>): grpc.ClientUnaryCall;
  revokeOwnKey(argument: _tollgate_quota_v1_RevokeOwnKeyRequest, callback: grpc.requestCallback<_tollgate_quota_v1_RevokeOwnKeyResponse__Output>): grpc.ClientUnaryCall;
  
}

/**
 * AccountService is what a signed-in user may do to their own account, called by the dashboard
 * (mesh caller "dashboard") after it verified the user's wallet signature (EIP-4361). Every
 * method but ResolveWalletAccount names the account; quota-meter answers only about that account's
 * own keys (a key of another account is NOT_FOUND, as if it did not exist). The operator token is
 * never involved.
 */
export interface AccountServiceHandlers extends grpc.UntypedServiceImplementation {
  /**
   * CreateOwnKey returns the key itself once; it is never stored or shown again.
   */
  CreateOwnKey: grpc.handleUnaryCall<_tollgate_quota_v1_CreateOwnKeyRequest__Output, _tollgate_quota_v1_CreateOwnKeyResponse>;
  
  /**
   * GetOwnCredits: the account's credit balance and its ledger by UTC day (top-ups, draws, refunds).
   */
  GetOwnCredits: grpc.handleUnaryCall<_tollgate_quota_v1_GetOwnCreditsRequest__Output, _tollgate_quota_v1_GetOwnCreditsResponse>;
  
  /**
   * GetOwnUsage: the plan as enforced, today's and this month's counts as the windows hold them
   * (the X-Quota-* numbers) and per-day calls and errors from the usage rollups.
   */
  GetOwnUsage: grpc.handleUnaryCall<_tollgate_quota_v1_GetOwnUsageRequest__Output, _tollgate_quota_v1_GetOwnUsageResponse>;
  
  ListOwnKeys: grpc.handleUnaryCall<_tollgate_quota_v1_ListOwnKeysRequest__Output, _tollgate_quota_v1_ListOwnKeysResponse>;
  
  /**
   * ReplaceOwnKey creates a new key, then revokes the old one (spec 5.4: a lost key is replaced).
   */
  ReplaceOwnKey: grpc.handleUnaryCall<_tollgate_quota_v1_ReplaceOwnKeyRequest__Output, _tollgate_quota_v1_ReplaceOwnKeyResponse>;
  
  /**
   * ResolveWalletAccount finds the account bound to a wallet address, creating it on the free
   * plan when `create` is set and there is none (the first sign-in).
   */
  ResolveWalletAccount: grpc.handleUnaryCall<_tollgate_quota_v1_ResolveWalletAccountRequest__Output, _tollgate_quota_v1_ResolveWalletAccountResponse>;
  
  RevokeOwnKey: grpc.handleUnaryCall<_tollgate_quota_v1_RevokeOwnKeyRequest__Output, _tollgate_quota_v1_RevokeOwnKeyResponse>;
  
}

export interface AccountServiceDefinition extends grpc.ServiceDefinition {
  CreateOwnKey: MethodDefinition<_tollgate_quota_v1_CreateOwnKeyRequest, _tollgate_quota_v1_CreateOwnKeyResponse, _tollgate_quota_v1_CreateOwnKeyRequest__Output, _tollgate_quota_v1_CreateOwnKeyResponse__Output>
  GetOwnCredits: MethodDefinition<_tollgate_quota_v1_GetOwnCreditsRequest, _tollgate_quota_v1_GetOwnCreditsResponse, _tollgate_quota_v1_GetOwnCreditsRequest__Output, _tollgate_quota_v1_GetOwnCreditsResponse__Output>
  GetOwnUsage: MethodDefinition<_tollgate_quota_v1_GetOwnUsageRequest, _tollgate_quota_v1_GetOwnUsageResponse, _tollgate_quota_v1_GetOwnUsageRequest__Output, _tollgate_quota_v1_GetOwnUsageResponse__Output>
  ListOwnKeys: MethodDefinition<_tollgate_quota_v1_ListOwnKeysRequest, _tollgate_quota_v1_ListOwnKeysResponse, _tollgate_quota_v1_ListOwnKeysRequest__Output, _tollgate_quota_v1_ListOwnKeysResponse__Output>
  ReplaceOwnKey: MethodDefinition<_tollgate_quota_v1_ReplaceOwnKeyRequest, _tollgate_quota_v1_ReplaceOwnKeyResponse, _tollgate_quota_v1_ReplaceOwnKeyRequest__Output, _tollgate_quota_v1_ReplaceOwnKeyResponse__Output>
  ResolveWalletAccount: MethodDefinition<_tollgate_quota_v1_ResolveWalletAccountRequest, _tollgate_quota_v1_ResolveWalletAccountResponse, _tollgate_quota_v1_ResolveWalletAccountRequest__Output, _tollgate_quota_v1_ResolveWalletAccountResponse__Output>
  RevokeOwnKey: MethodDefinition<_tollgate_quota_v1_RevokeOwnKeyRequest, _tollgate_quota_v1_RevokeOwnKeyResponse, _tollgate_quota_v1_RevokeOwnKeyRequest__Output, _tollgate_quota_v1_RevokeOwnKeyResponse__Output>
}
