#!/usr/bin/python3
"""A gRPC peer on Debian's python3-grpcio, with generic handlers (no .proto): as a server, `/amesh.test.Echo/Say`
answers the request's bytes and `/amesh.test.Echo/Missing` fails with NOT_FOUND; as a client, it calls one method
and prints `OK <reply>` or `STATUS <code name>`.

usage: grpc_echo.py serve PORT [HOST]   (HOST: the address to listen on, every one by default)
       grpc_echo.py call HOST:PORT METHOD MESSAGE
"""
import sys
from concurrent import futures

import grpc


def serve(port, host="0.0.0.0"):
    def say(request, context):
        return request

    def missing(request, context):
        context.abort(grpc.StatusCode.NOT_FOUND, "no such thing")

    handlers = {
        "Say": grpc.unary_unary_rpc_method_handler(say),
        "Missing": grpc.unary_unary_rpc_method_handler(missing),
    }
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("amesh.test.Echo", handlers),))
    server.add_insecure_port(f"{host}:{port}")
    server.start()
    print("listening", flush=True)
    server.wait_for_termination()


def call(target, method, message):
    with grpc.insecure_channel(target) as ch:
        stub = ch.unary_unary(f"/amesh.test.Echo/{method}")
        try:
            print("OK", stub(message.encode(), timeout=5).decode())
        except grpc.RpcError as e:
            print("STATUS", e.code().name)


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(int(sys.argv[2]), *sys.argv[3:4])
    else:
        call(*sys.argv[2:5])
