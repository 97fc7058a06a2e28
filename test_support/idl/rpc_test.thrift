// The end-to-end RPC spec's service (spec/integration/rpc_end_to_end_spec.rb): a void call, arguments and an answer,
// a struct both ways, a declared exception, a oneway call.
include "codec_test.thrift"

namespace rb RpcTest

exception Oops {
  1: string why,
}

service Calc {
  void ping(),
  i32 add(1: i32 a, 2: i32 b),
  codec_test.Small echo(1: codec_test.Small s),
  i32 trouble(1: string why) throws (1: Oops oops),
  oneway void fire(1: i32 n),
}
