# frozen_string_literal: true

# Struct write and read through a transport stack with thrift_native, under GC.stress, across compaction that moves
# every object, and from 8 threads: prints (Marshal) what was written and read each way, for gc_threads_spec.rb to
# compare with the C accelerator. A child process of its own, because GC.stress costs in proportion to the heap: in
# the whole suite's process the same work takes twenty times as long.
#   ruby stack_gc_runner.rb binary|compact framed|buffered|header|header-zlib COUNT < Marshal [bytes of each message]
# framed and buffered: FramedTransport or BufferedTransport over a Ruby transport (`read` answers up to what is asked,
# as a socket does), their buffers read and written in place and refilled mid-struct, with the loaded thrift.
# header, header-zlib: HeaderProtocol over a HeaderTransport (thrift master's, THRIFT_MASTER_RB), with and without
# the ZLIB transform.

require_relative "../../../test_support/accelerator"
require_relative "../../../test_support/gc_stress"
require_relative "../../../test_support/codec_types"
require_relative "../../../test_support/codec_samples"
require_relative "../helpers/ruby_facts"

protocol, transport, count = ARGV[0], ARGV[1], Integer(ARGV[2])
HEADER = transport.start_with?("header")
Accelerator.load(HEADER ? "ours-master" : "ours")
CodecTypes.load!
require_relative "../fixtures/pipe_transport"

expected = Marshal.load($stdin.read)
r = Random.new(41)
objects = Array.new(count) { CodecSamples.everything(r) }
KLASS = protocol == "compact" ? Thrift::CompactProtocol : Thrift::BinaryProtocolAccelerated

if HEADER
  ID = protocol == "compact" ? Thrift::HeaderSubprotocolID::COMPACT : Thrift::HeaderSubprotocolID::BINARY
  ZLIB = transport == "header-zlib"

  def protocol_over(trans, klass = Thrift::HeaderProtocol)
    klass.new(trans, nil, ID).tap { |p| p.add_transform(Thrift::HeaderTransformID::ZLIB) if ZLIB }
  end

  def write_all(objects)
    mem = Thrift::MemoryBufferTransport.new
    prot = protocol_over(mem)
    objects.map do |o|
      o.write(prot)
      prot.trans.flush
      mem.read(mem.available)
    end
  end

  def reader(stream, klass = Thrift::HeaderProtocol) = protocol_over(Thrift::MemoryBufferTransport.new(stream.dup), klass)
else
  STACK = transport == "framed" ? Thrift::FramedTransport : Thrift::BufferedTransport

  def write_all(objects)
    out = STACK.new(PipeTransport.new)
    prot = KLASS.new(out)
    objects.map do |o|
      o.write(prot)
      out.flush
      out.instance_variable_get(:@transport).unread.slice!(0..)
    end
  end

  # A protocol subclass takes the dispatch path.
  def reader(stream, klass = KLASS) = klass.new(STACK.new(PipeTransport.new(stream.dup)))
end

def read_all(stream, count, klass = nil)
  prot = klass ? reader(stream, klass) : reader(stream)
  Array.new(count) { CodecTest::Everything.new.tap { |o| o.read(prot) } }
end

dispatching = Class.new(HEADER ? Thrift::HeaderProtocol : KLASS)
stream = expected.join
out = {}
begin
  GC.stress = GcStress.setting
  out[:stress_written] = write_all(objects.first(2))
  out[:stress_read] = read_all(stream, 2) == objects.first(2)
ensure
  GC.stress = false
end
prot = reader(stream)
CodecTest::Everything.new.read(prot) # a transport half-way through a stream, across the move
RubyFacts.verify_compaction
out[:compacted_read] = Array.new(count - 1) { CodecTest::Everything.new.tap { |o| o.read(prot) } } == objects.drop(1)
threads = Array.new(8) do
  Thread.new { [write_all(objects), read_all(stream, count) == objects, read_all(stream, count, dispatching) == objects] }
end
out[:threads] = threads.map(&:value)
$stdout.binmode
$stdout.write Marshal.dump(out)
