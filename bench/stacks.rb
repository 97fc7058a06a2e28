# frozen_string_literal: true

# One accelerator's struct read and write through the transport stacks services use, one message (write + flush)
# per struct: MemoryBufferTransport alone, FramedTransport over one, an IOStreamTransport over StringIOs (a Rack or
# Thin request body, a servlet's answer), an HTTPClientTransport's request buffer and response (its POST left out),
# BufferedTransport over an IOStreamTransport (StringIOs, as a socket's IO would be), and where the loaded thrift has it (master), HeaderProtocol over a
# HeaderTransport over a MemoryBufferTransport, plain and with the ZLIB transform. The small and large benchmark
# structs of bench/structs.rb.
# Run by bench/run.rb in a child process per accelerator; prints one JSON line per measurement.
#   ruby bench/stacks.rb pure|c|c-master|ours|pure-master|ours-master [seconds, unused] [binary|compact] [header]
# With `header`, only the HeaderProtocol stacks (thrift master's library: the *-master accelerators); without, only
# the others (bench/run.rb measures the two sets apart, each under one library for every column).
# BENCH_QUICK=1: 4,000 small and 1 large, best of 2; BENCH_ONLY="framed small": that stack and struct alone.

require "json"
require "stringio"
require_relative "../test_support/accelerator"
require_relative "../test_support/codec_types"
require_relative "../test_support/codec_samples"
require_relative "selection"

IMPL = ARGV.fetch(0)
PROTOCOL_NAME = ARGV.fetch(2, "binary")
Accelerator.load(IMPL)
CodecTypes.load!
Accelerator.exit_unless_structs_run
PROTOCOL = Accelerator.protocol_class(PROTOCOL_NAME)

# Best of ROUNDS: this machine is a VM whose speed varies; the fastest round is the least disturbed.
ROUNDS = Selection.pick(3, 2)

def measure(count, prepare)
  Array.new(ROUNDS) do
    run = prepare.call
    GC.start
    before = GC.stat(:total_allocated_objects)
    t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    i = 0
    while i < count
      run.call
      i += 1
    end
    seconds = Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0
    { seconds: seconds, objects_per_op: (GC.stat(:total_allocated_objects) - before).to_f / count }
  end.min_by { |r| r[:seconds] }
end

# A writing stack: [protocol, the transport to flush, where the bytes end up (a MemoryBufferTransport or StringIO)].
def memory_writer(wrap = nil)
  m = Thrift::MemoryBufferTransport.new
  trans = wrap ? wrap.call(m) : m
  [PROTOCOL.new(trans), trans, m]
end

STACKS = {
  "memory" => {
    writer: -> { memory_writer },
    reader: ->(bytes) { PROTOCOL.new(Thrift::MemoryBufferTransport.new(bytes)) }
  },
  "framed" => {
    writer: -> { memory_writer(Thrift::FramedTransport.method(:new)) },
    reader: ->(bytes) { PROTOCOL.new(Thrift::FramedTransport.new(Thrift::MemoryBufferTransport.new(bytes))) }
  },
  "iostream" => {
    writer: lambda {
      io = StringIO.new(+"".b)
      trans = Thrift::IOStreamTransport.new(StringIO.new(+"".b), io)
      [PROTOCOL.new(trans), trans, io]
    },
    reader: ->(bytes) { PROTOCOL.new(Thrift::IOStreamTransport.new(StringIO.new(bytes), StringIO.new(+"".b))) }
  },
  # An HTTPClientTransport's request buffer, emptied as its `flush` empties it, and the response its `flush` leaves
  # (@inbuf, a StringIO): the POST itself is bench/http.rb's.
  "http" => {
    writer: lambda {
      trans = Thrift::HTTPClientTransport.new("http://localhost:1/rpc")
      [PROTOCOL.new(trans), NO_FLUSH, trans]
    },
    reader: lambda { |bytes|
      trans = Thrift::HTTPClientTransport.new("http://localhost:1/rpc")
      trans.instance_variable_set(:@inbuf, StringIO.new(bytes))
      PROTOCOL.new(trans)
    }
  },
  "buffered" => {
    writer: lambda {
      io = StringIO.new("".b)
      trans = Thrift::BufferedTransport.new(Thrift::IOStreamTransport.new(StringIO.new("".b), io))
      [PROTOCOL.new(trans), trans, io]
    },
    reader: lambda { |bytes|
      PROTOCOL.new(Thrift::BufferedTransport.new(Thrift::IOStreamTransport.new(StringIO.new(bytes), StringIO.new("".b))))
    }
  }
}

if defined?(Thrift::HeaderProtocol)
  HEADER_PROTOCOL_ID = PROTOCOL_NAME == "compact" ? Thrift::HeaderSubprotocolID::COMPACT : Thrift::HeaderSubprotocolID::BINARY
  { "header" => false, "header-zlib" => true }.each do |stack, zlib|
    STACKS[stack] = {
      writer: lambda {
        m = Thrift::MemoryBufferTransport.new
        prot = Thrift::HeaderProtocol.new(m, nil, HEADER_PROTOCOL_ID)
        prot.add_transform(Thrift::HeaderTransformID::ZLIB) if zlib
        [prot, prot.trans, m]
      },
      reader: ->(bytes) { Thrift::HeaderProtocol.new(Thrift::MemoryBufferTransport.new(bytes), nil, HEADER_PROTOCOL_ID) }
    }
  end
end
STACKS.select! { |name, _| name.start_with?("header") == (ARGV[3] == "header") }
STACKS.freeze

# The HTTP stack's `flush`: nothing (drain empties its request buffer).
NO_FLUSH = Object.new.tap { |o| o.define_singleton_method(:flush) {} }

# What reached the sink, taken out of it.
def drain(sink)
  case sink
  when StringIO then sink.string.dup.tap { sink.truncate(0); sink.rewind }
  when Thrift::HTTPClientTransport then sink.instance_variable_get(:@outbuf).dup.tap { sink.instance_variable_set(:@outbuf, +"".b) }
  else sink.read(sink.available)
  end
end

def held(sink)
  case sink
  when StringIO then sink.string.bytesize
  when Thrift::HTTPClientTransport then sink.instance_variable_get(:@outbuf).bytesize
  else sink.available
  end
end

[["small", -> { CodecSamples.small }, CodecTest::Small, Selection.pick(20_000, 4_000)],
 ["large", -> { CodecSamples.large }, CodecTest::Level, Selection.pick(3, 1)]].each do |name, sample_of, klass, count|
  stacks = STACKS.select { |stack, _| Selection.wanted?("#{stack} #{name}") }
  next if stacks.empty?

  sample = sample_of.call
  stacks.each do |stack, make|
    prot, trans, sink = make[:writer].call
    sample.write(prot)
    trans.flush
    one = drain(sink)
    check = klass.new.tap { |o| o.read(make[:reader].call(one)) }
    raise "#{stack} #{name}: round trip failed" unless check == sample

    write = measure(count, lambda {
      prot, trans, sink = make[:writer].call
      lambda {
        sample.write(prot)
        trans.flush
        drain(sink) if held(sink) > 1 << 20
      }
    })
    data = one * count
    read = measure(count, lambda {
      prot = make[:reader].call(data.dup)
      -> { klass.new.read(prot) }
    })
    [["write", write], ["read", read]].each do |op, result|
      puts JSON.generate(impl: IMPL, op: "#{stack} #{name}_#{op}", count: count, bytes: one.bytesize,
                         seconds: result[:seconds].round(4), objects_per_op: result[:objects_per_op].round(2))
      $stdout.flush
    end
  end
end
