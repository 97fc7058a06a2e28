# frozen_string_literal: true

# Struct write and read through HeaderProtocol (thrift master, THRIFT_MASTER_RB) with thrift_native, under
# GC.stress, across compaction that moves every object, and from 8 threads: prints (Marshal) what was written and
# read each way, for gc_threads_spec.rb to compare with master's C accelerator.
#   ruby header_gc_run.rb binary|compact header|header-zlib COUNT < Marshal [bytes of each frame, from C]

require_relative "accelerator"
require_relative "codec_types"
require_relative "codec_samples"
Accelerator.load("ours-master")
CodecTypes.load!

protocol, transport, count = ARGV[0], ARGV[1], Integer(ARGV[2])
expected = Marshal.load($stdin.read)
ID = protocol == "compact" ? Thrift::HeaderSubprotocolID::COMPACT : Thrift::HeaderSubprotocolID::BINARY
ZLIB = transport == "header-zlib"
r = Random.new(41)
objects = Array.new(count) { CodecSamples.everything(r) }

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

def read_all(stream, count, klass = Thrift::HeaderProtocol)
  prot = protocol_over(Thrift::MemoryBufferTransport.new(stream.dup), klass)
  Array.new(count) { CodecTest::Everything.new.tap { |o| o.read(prot) } }
end

stream = expected.join
out = {}
begin
  GC.stress = true
  out[:stress_written] = write_all(objects.first(2))
  out[:stress_read] = read_all(stream, 2) == objects.first(2)
ensure
  GC.stress = false
end
prot = protocol_over(Thrift::MemoryBufferTransport.new(stream.dup))
CodecTest::Everything.new.read(prot) # a header transport half-way through a stream, across the move
GC.verify_compaction_references(double_heap: true, toward: :empty)
out[:compacted_read] = Array.new(count - 1) { CodecTest::Everything.new.tap { |o| o.read(prot) } } == objects.drop(1)
threads = Array.new(8) do
  Thread.new { [write_all(objects), read_all(stream, count) == objects, read_all(stream, count, Class.new(Thrift::HeaderProtocol)) == objects] }
end
out[:threads] = threads.map(&:value)
$stdout.binmode
$stdout.write Marshal.dump(out)
