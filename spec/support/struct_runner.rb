# frozen_string_literal: true

# Struct round trips with one accelerator, for the differential specs (one process per accelerator).
#   ruby struct_runner.rb ACCELERATOR write SEED COUNT   -> Marshal [bytes of each random Everything]
#   ruby struct_runner.rb ACCELERATOR read CLASS < Marshal [bytes, ...] -> Marshal [inspect or [error class, message]]
#   ruby struct_runner.rb ACCELERATOR encode < Marshal [struct, ...]   -> Marshal [bytes of each]
#   ruby struct_runner.rb ACCELERATOR read-rss CLASS < Marshal [bytes, ...]
#       -> Marshal [[outcome, ...], growth of peak RSS in kB, growth of peak virtual size in kB]
#   ruby struct_runner.rb ACCELERATOR calls SEED          -> Marshal [write call log, read call log] of a recording protocol
require_relative "accelerator"
require_relative "codec_types"
require_relative "codec_samples"

Accelerator.load(ARGV.fetch(0))
CodecTypes.load!
$stdout.binmode

# DISPATCH=1 reads through a subclass of the protocol: the dispatch path instead of the fast path.
PROTOCOL_CLASS = ENV["DISPATCH"] ? Class.new(Accelerator.protocol_class) : Accelerator.protocol_class

def decode(klass, bytes, protocol_class = PROTOCOL_CLASS)
  obj = klass.new
  obj.read(protocol_class.new(Thrift::MemoryBufferTransport.new(bytes)))
  obj.inspect
rescue StandardError => e
  [e.class.name, e.message, e.respond_to?(:type) ? e.type : nil]
end

case ARGV.fetch(1)
when "write"
  r = Random.new(Integer(ARGV.fetch(2)))
  out = Array.new(Integer(ARGV.fetch(3))) do
    trans = Thrift::MemoryBufferTransport.new
    CodecSamples.everything(r).write(Accelerator.protocol_class.new(trans))
    trans.read(trans.available)
  end
  $stdout.write Marshal.dump(out)
when "read"
  klass = CodecTest.const_get(ARGV.fetch(2))
  $stdout.write Marshal.dump(Marshal.load($stdin.read).map { |bytes| decode(klass, bytes) })
when "encode"
  out = Marshal.load($stdin.read).map do |obj|
    trans = Thrift::MemoryBufferTransport.new
    obj.write(Accelerator.protocol_class.new(trans))
    trans.read(trans.available)
  end
  $stdout.write Marshal.dump(out)
when "read-rss"
  # As "read", and how much the peak resident set (VmHWM) and the peak address space (VmPeak, which also sees a large
  # reservation that is never touched) grew while decoding: a declared size must not allocate.
  peak = -> { File.read("/proc/self/status").then { |s| [s[/^VmHWM:\s+(\d+)/, 1].to_i, s[/^VmPeak:\s+(\d+)/, 1].to_i] } }
  klass = CodecTest.const_get(ARGV.fetch(2))
  inputs = Marshal.load($stdin.read)
  decode(klass, inputs.first) if inputs.any? # warm-up: the first decode compiles plans and fills caches
  before = peak.call
  outcomes = inputs.map { |bytes| decode(klass, bytes) }
  after = peak.call
  $stdout.write Marshal.dump([outcomes, after[0] - before[0], after[1] - before[1]])
when "calls"
  # A protocol that records every call the struct codec makes (the dispatch path), then does it.
  recording = Class.new(Accelerator.protocol_class) do
    attr_reader :log

    def initialize(*)
      super
      @log = []
    end

    (Thrift::BinaryProtocol.instance_methods(false) + %i[skip]).grep(/\A(read|write|skip)/).each do |name|
      define_method(name) do |*args|
        @log << [name, *args.map { |a| a.is_a?(String) ? a.b : a }]
        super(*args)
      end
    end
  end
  sample = CodecSamples.everything(Random.new(Integer(ARGV.fetch(2))))
  writer = recording.new(Thrift::MemoryBufferTransport.new)
  sample.write(writer)
  bytes = writer.trans.read(writer.trans.available)
  reader = recording.new(Thrift::MemoryBufferTransport.new(bytes))
  CodecTest::Everything.new.read(reader)
  $stdout.write Marshal.dump([writer.log, reader.log])
end
