import type * as grpc from '@grpc/grpc-js';
import {
  create,
  fromBinary,
  toBinary,
  type DescMessage,
  type DescService,
  type MessageShape,
} from '@bufbuild/protobuf';

/**
 * A grpc-js service definition derived from a protobuf-es service descriptor, so generated code stays the one
 * source of truth for method paths and message types. Replies are wrapped with `create()`: grpc-js would
 * otherwise fail a plain object with a bare INTERNAL error.
 */
export function grpcServiceDefinition(svc: DescService): grpc.ServiceDefinition {
  const def: Record<string, grpc.MethodDefinition<unknown, unknown>> = {};
  for (const m of svc.methods) {
    const codec = <D extends DescMessage>(d: D) => ({
      serialize: (msg: MessageShape<D>): Buffer => Buffer.from(toBinary(d, create(d, msg as never))),
      deserialize: (b: Buffer): MessageShape<D> => fromBinary(d, b),
    });
    const input = codec(m.input);
    const output = codec(m.output);
    def[m.localName] = {
      path: `/${svc.typeName}/${m.name}`,
      requestStream: m.methodKind === 'client_streaming' || m.methodKind === 'bidi_streaming',
      responseStream: m.methodKind === 'server_streaming' || m.methodKind === 'bidi_streaming',
      requestSerialize: input.serialize,
      requestDeserialize: input.deserialize,
      responseSerialize: output.serialize,
      responseDeserialize: output.deserialize,
      originalName: m.name,
    } as grpc.MethodDefinition<unknown, unknown>;
  }
  return def;
}
