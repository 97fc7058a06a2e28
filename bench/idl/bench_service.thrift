// The RPC benchmark's service (bench/rpc.rb): one call answering the small benchmark struct, one the large one.
include "../../test_support/idl/codec_test.thrift"

namespace rb BenchService

service Bench {
  codec_test.Small small(1: i32 n),
  codec_test.Level large(1: i32 n),
}
