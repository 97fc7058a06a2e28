# frozen_string_literal: true

# A fixed struct codec workload for instruction counting, where wall-clock time on this VM is too noisy:
# 20,000 reads and writes of the small benchmark struct and one of the large one, in one protocol.
#
#   valgrind --tool=callgrind --callgrind-out-file=tmp/cg.out ruby bench/codec_workload.rb binary|compact [ROOT]
#   bin/callgrind-sum tmp/cg.out     # the extension's own instructions (self cost of thrift_native.so)
#
# ROOT is a checkout of this project whose lib/ is loaded (default: this one), so that two builds can be compared.

root = File.expand_path(ARGV.fetch(1, File.join(__dir__, "..")))
ENV["PROTOCOL"] = ARGV.fetch(0, "binary")
$LOAD_PATH.unshift File.join(root, "lib")
require "thrift_native"
abort "thrift_native is not active" unless ThriftNative.active?
require_relative "../test_support/codec_types"
require_relative "../test_support/codec_samples"
CodecTypes.load!

protocol = ENV["PROTOCOL"] == "compact" ? Thrift::CompactProtocol : Thrift::BinaryProtocolAccelerated
[[CodecSamples.small, CodecTest::Small, 20_000], [CodecSamples.large, CodecTest::Level, 1]].each do |sample, klass, n|
  out = Thrift::MemoryBufferTransport.new
  out_prot = protocol.new(out)
  sample.write(out_prot)
  data = out.read(out.available)
  n.times do
    out.reset_buffer
    sample.write(out_prot)
  end
  input = Thrift::MemoryBufferTransport.new
  in_prot = protocol.new(input)
  n.times do
    input.reset_buffer(data)
    klass.new.read(in_prot)
  end
end
