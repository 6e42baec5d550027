import * as grpc from '@grpc/grpc-js';
import type { DescMethod, DescService, MessageInitShape, MessageShape } from '@bufbuild/protobuf';
import { grpcServiceDefinition } from './grpc-service.js';

/** What a call of `M` sends: a protobuf-es init object, which the definition's serializer completes with `create()`. */
type Request<M extends DescMethod> = MessageInitShape<M['input']>;
/** What a call of `M` receives: the decoded message. */
type Response<M extends DescMethod> = MessageShape<M['output']>;

/** The grpc-js call of one RPC, its shape chosen by the RPC's kind and its messages typed from its descriptor. */
export type ClientCall<M extends DescMethod> = M['methodKind'] extends 'unary'
  ? (
      request: Request<M>,
      metadata: grpc.Metadata,
      options: grpc.CallOptions,
      callback: grpc.requestCallback<Response<M>>,
    ) => grpc.ClientUnaryCall
  : M['methodKind'] extends 'server_streaming'
    ? (
        request: Request<M>,
        metadata: grpc.Metadata,
        options?: grpc.CallOptions,
      ) => grpc.ClientReadableStream<Response<M>>
    : M['methodKind'] extends 'client_streaming'
      ? (
          metadata: grpc.Metadata,
          options: grpc.CallOptions,
          callback: grpc.requestCallback<Response<M>>,
        ) => grpc.ClientWritableStream<Request<M>>
      : (metadata: grpc.Metadata, options?: grpc.CallOptions) => grpc.ClientDuplexStream<Request<M>, Response<M>>;

/** A grpc-js client of the service `S`: one typed method per RPC, under its protobuf-es `localName`. */
export type TypedClient<S extends DescService> = grpc.Client & {
  readonly [K in keyof S['method']]: ClientCall<S['method'][K]>;
};

/** A client of `svc` on the channel to `address`, its methods typed from the service's generated descriptor. */
export function makeTypedClient<S extends DescService>(
  svc: S,
  address: string,
  credentials: grpc.ChannelCredentials,
  options?: Partial<grpc.ChannelOptions>,
): TypedClient<S> {
  const Client = grpc.makeGenericClientConstructor(grpcServiceDefinition(svc), svc.name);
  // grpc-js puts a method on the instance for each entry of the definition, by `localName`, and types them all as
  // `Function`; the definition was derived from `svc`, so they take and return what TypedClient<S> says.
  return new Client(address, credentials, options) as TypedClient<S>;
}
