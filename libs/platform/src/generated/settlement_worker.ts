import type * as grpc from '@grpc/grpc-js';
import type { MessageTypeDefinition } from '@grpc/proto-loader';

import type { Difference as _tollgate_settlement_v1_Difference, Difference__Output as _tollgate_settlement_v1_Difference__Output } from './tollgate/settlement/v1/Difference.ts';
import type { ListOwnPaymentsRequest as _tollgate_settlement_v1_ListOwnPaymentsRequest, ListOwnPaymentsRequest__Output as _tollgate_settlement_v1_ListOwnPaymentsRequest__Output } from './tollgate/settlement/v1/ListOwnPaymentsRequest.ts';
import type { ListOwnPaymentsResponse as _tollgate_settlement_v1_ListOwnPaymentsResponse, ListOwnPaymentsResponse__Output as _tollgate_settlement_v1_ListOwnPaymentsResponse__Output } from './tollgate/settlement/v1/ListOwnPaymentsResponse.ts';
import type { ListSettlementsRequest as _tollgate_settlement_v1_ListSettlementsRequest, ListSettlementsRequest__Output as _tollgate_settlement_v1_ListSettlementsRequest__Output } from './tollgate/settlement/v1/ListSettlementsRequest.ts';
import type { ListSettlementsResponse as _tollgate_settlement_v1_ListSettlementsResponse, ListSettlementsResponse__Output as _tollgate_settlement_v1_ListSettlementsResponse__Output } from './tollgate/settlement/v1/ListSettlementsResponse.ts';
import type { OutcomeTotal as _tollgate_settlement_v1_OutcomeTotal, OutcomeTotal__Output as _tollgate_settlement_v1_OutcomeTotal__Output } from './tollgate/settlement/v1/OutcomeTotal.ts';
import type { ReconcileRequest as _tollgate_settlement_v1_ReconcileRequest, ReconcileRequest__Output as _tollgate_settlement_v1_ReconcileRequest__Output } from './tollgate/settlement/v1/ReconcileRequest.ts';
import type { ReconcileResponse as _tollgate_settlement_v1_ReconcileResponse, ReconcileResponse__Output as _tollgate_settlement_v1_ReconcileResponse__Output } from './tollgate/settlement/v1/ReconcileResponse.ts';
import type { Settlement as _tollgate_settlement_v1_Settlement, Settlement__Output as _tollgate_settlement_v1_Settlement__Output } from './tollgate/settlement/v1/Settlement.ts';
import type { SettlementAccountServiceClient as _tollgate_settlement_v1_SettlementAccountServiceClient, SettlementAccountServiceDefinition as _tollgate_settlement_v1_SettlementAccountServiceDefinition } from './tollgate/settlement/v1/SettlementAccountService.ts';
import type { SettlementAdminServiceClient as _tollgate_settlement_v1_SettlementAdminServiceClient, SettlementAdminServiceDefinition as _tollgate_settlement_v1_SettlementAdminServiceDefinition } from './tollgate/settlement/v1/SettlementAdminService.ts';

type SubtypeConstructor<Constructor extends new (...args: any) => any, Subtype> = {
  new(...args: ConstructorParameters<Constructor>): Subtype;
};

export interface ProtoGrpcType {
  tollgate: {
    settlement: {
      v1: {
        Difference: MessageTypeDefinition<_tollgate_settlement_v1_Difference, _tollgate_settlement_v1_Difference__Output>
        ListOwnPaymentsRequest: MessageTypeDefinition<_tollgate_settlement_v1_ListOwnPaymentsRequest, _tollgate_settlement_v1_ListOwnPaymentsRequest__Output>
        ListOwnPaymentsResponse: MessageTypeDefinition<_tollgate_settlement_v1_ListOwnPaymentsResponse, _tollgate_settlement_v1_ListOwnPaymentsResponse__Output>
        ListSettlementsRequest: MessageTypeDefinition<_tollgate_settlement_v1_ListSettlementsRequest, _tollgate_settlement_v1_ListSettlementsRequest__Output>
        ListSettlementsResponse: MessageTypeDefinition<_tollgate_settlement_v1_ListSettlementsResponse, _tollgate_settlement_v1_ListSettlementsResponse__Output>
        OutcomeTotal: MessageTypeDefinition<_tollgate_settlement_v1_OutcomeTotal, _tollgate_settlement_v1_OutcomeTotal__Output>
        ReconcileRequest: MessageTypeDefinition<_tollgate_settlement_v1_ReconcileRequest, _tollgate_settlement_v1_ReconcileRequest__Output>
        ReconcileResponse: MessageTypeDefinition<_tollgate_settlement_v1_ReconcileResponse, _tollgate_settlement_v1_ReconcileResponse__Output>
        Settlement: MessageTypeDefinition<_tollgate_settlement_v1_Settlement, _tollgate_settlement_v1_Settlement__Output>
        /**
         * SettlementAccountService shows one payer its own per-call payments, for the account dashboard
         * (mesh caller `dashboard`, its mesh token; no other caller and no other method). The dashboard
         * names the address its user proved with a wallet signature; the worker lists nothing else.
         */
        SettlementAccountService: SubtypeConstructor<typeof grpc.Client, _tollgate_settlement_v1_SettlementAccountServiceClient> & { service: _tollgate_settlement_v1_SettlementAccountServiceDefinition }
        /**
         * SettlementAdminService is the operator's view of the payment ledger the settlement worker keeps
         * in PostgreSQL (every tollgate.settlement.v2 outcome, once). Every call needs the operator token
         * in the `authorization: Bearer <token>` metadata; no mesh service calls it.
         */
        SettlementAdminService: SubtypeConstructor<typeof grpc.Client, _tollgate_settlement_v1_SettlementAdminServiceClient> & { service: _tollgate_settlement_v1_SettlementAdminServiceDefinition }
      }
    }
  }
}

