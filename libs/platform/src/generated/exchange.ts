import type * as grpc from '@grpc/grpc-js';
import type { MessageTypeDefinition } from '@grpc/proto-loader';

import type { CallStatus as _tollgate_mesh_v1_CallStatus, CallStatus__Output as _tollgate_mesh_v1_CallStatus__Output } from './tollgate/mesh/v1/CallStatus.ts';

type SubtypeConstructor<Constructor extends new (...args: any) => any, Subtype> = {
  new(...args: ConstructorParameters<Constructor>): Subtype;
};

export interface ProtoGrpcType {
  tollgate: {
    mesh: {
      v1: {
        CallStatus: MessageTypeDefinition<_tollgate_mesh_v1_CallStatus, _tollgate_mesh_v1_CallStatus__Output>
      }
    }
  }
}

