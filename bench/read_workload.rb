# frozen_string_literal: true

# The hot reads, fixed for instruction counting (wall-clock time on this VM is too noisy): 200,000 compact
# read_byte calls and 200,000 binary read_i32 calls over a MemoryBufferTransport, then 20,000 reads of the small
# benchmark struct (binary). What the extension does per call there is mostly ivar access (the protocol's @trans,
# the buffer's @buf and @index), so this is where the per-Ruby ivar slots (ext/thrift_native/src/ruby/ivars.rs) show.
#
#   valgrind --tool=callgrind --callgrind-out-file=tmp/cg.out ruby bench/read_workload.rb [LIB]
#   callgrind_annotate tmp/cg.out | head     # the process's total instructions ("PROGRAM TOTALS")
#
# LIB: the lib/ whose thrift_native is loaded (default this project's). bin/callgrind-reads runs it per Ruby with
# the extension as built and built without the slots (THRIFT_NATIVE_IVARS=rb_ivar_get).

$LOAD_PATH.unshift ARGV.fetch(0, File.expand_path("../lib", __dir__))
require "thrift_native"
abort "thrift_native is not active" unless ThriftNative.active?
require_relative "../test_support/codec_types"
require_relative "../test_support/codec_samples"
CodecTypes.load!

def reads(protocol, method, bytes, count)
  trans = Thrift::MemoryBufferTransport.new
  prot = protocol.new(trans)
  per_buffer = 4000 / bytes
  (count / per_buffer).times do
    trans.reset_buffer("\x01".b * (per_buffer * bytes))
    i = 0
    while i < per_buffer
      prot.__send__(method)
      i += 1
    end
  end
end

# READS=0: everything but the reads (Ruby's start, loading, the types), the baseline to subtract.
SCALE = Integer(ENV.fetch("READS", "1"))
reads(Thrift::CompactProtocol, :read_byte, 1, 200_000 * SCALE)
reads(Thrift::BinaryProtocolAccelerated, :read_i32, 4, 200_000 * SCALE)
out = Thrift::MemoryBufferTransport.new
CodecSamples.small.write(Thrift::BinaryProtocolAccelerated.new(out))
data = out.read(out.available)
input = Thrift::MemoryBufferTransport.new
prot = Thrift::BinaryProtocolAccelerated.new(input)
(20_000 * SCALE).times do
  input.reset_buffer(data)
  CodecTest::Small.new.read(prot)
end
warn "ivar access: #{ThriftNative.__send__(:ivar_access)}"
