# frozen_string_literal: true

# The StringIO transports in the states their in-place reads and writes must notice (a position moved by Ruby code, a
# side closed, a frozen StringIO, an output not at its end, a UTF-8 output, an HTTP response read to its end), each
# scenario run with one accelerator:
#   ruby string_io_runner.rb ACCELERATOR -> Marshal {scenario => [[outcome of each step], state afterwards]}
# A step is a protocol call or a struct read or write (BinaryProtocol, BinaryProtocolAccelerated, CompactProtocol);
# the state is each StringIO's position, String (bytes and encoding) and whether it is at its end.
require_relative "../../../test_support/accelerator"
require_relative "../../../test_support/codec_types"
require_relative "../../../test_support/codec_samples"
require_relative "outcome"
Accelerator.load(ARGV.fetch(0))
require "stringio"
CodecTypes.load!
$stdout.binmode

PROTOCOLS = { "plain" => Thrift::BinaryProtocol, "accelerated" => Thrift::BinaryProtocolAccelerated,
              "compact" => Thrift::CompactProtocol }.freeze
SAMPLE = CodecSamples.small

def bytes_of(klass, obj)
  m = Thrift::MemoryBufferTransport.new
  obj.write(klass.new(m))
  m.read(m.available)
end

def state(*ios) = ios.map { |io| [io.pos, io.string.b, io.string.encoding.name, io.closed_read?, io.closed_write?] }

def step
  Outcome.ok(yield.then { |v| v.is_a?(String) ? [v.b, v.encoding.name] : v.inspect })
rescue StandardError => e
  Outcome.failed(e, Outcome.first_line(e).gsub(/0x\h+/, "0x").b) # an object's address differs between processes
end

def http(bytes)
  Thrift::HTTPClientTransport.new("http://localhost:1/rpc").tap do |h|
    h.instance_variable_set(:@inbuf, StringIO.new(bytes))
    h.instance_variable_set(:@response_code, 200)
  end
end

results = {}
PROTOCOLS.each do |name, klass|
  data = bytes_of(klass, SAMPLE)
  scenario = ->(label, &block) { results["#{name} #{label}"] = block.call }

  scenario.call("input moved by Ruby code between reads") do
    input = StringIO.new("\x00\x00\x00\x07#{data}".b)
    prot = klass.new(Thrift::IOStreamTransport.new(input, StringIO.new(+"")))
    steps = [step { prot.read_i32 }, step { input.pos = 4; CodecTest::Small.new.tap { |s| s.read(prot) } },
             step { input.pos -= 3; prot.read_byte }]
    [steps, state(input)]
  end
  scenario.call("input closed for reading") do
    input = StringIO.new(data.dup).tap(&:close_read)
    prot = klass.new(Thrift::IOStreamTransport.new(input, StringIO.new(+"")))
    [[step { prot.read_byte }, step { CodecTest::Small.new.read(prot) }], [input.pos]]
  end
  scenario.call("frozen input and output") do
    input = StringIO.new(data.dup).freeze
    output = StringIO.new(+"").freeze
    prot = klass.new(Thrift::IOStreamTransport.new(input, output))
    [[step { prot.read_i16 }, step { SAMPLE.write(prot) }, step { prot.write_i32(5) }], []]
  end
  scenario.call("output not at its end, then at it") do
    output = StringIO.new(+"0123456789".b)
    output.pos = 2
    prot = klass.new(Thrift::IOStreamTransport.new(StringIO.new(+""), output))
    steps = [step { prot.write_i16(0x4142) }, step { SAMPLE.write(prot) }, step { prot.write_string("é") }]
    [steps, state(output)]
  end
  scenario.call("UTF-8 and read-only outputs") do
    utf8 = StringIO.new(+"ü")
    utf8.read # at its end
    read_only = StringIO.new("x", "r")
    steps = [step { SAMPLE.write(klass.new(Thrift::IOStreamTransport.new(StringIO.new(+""), utf8))) },
             step { klass.new(Thrift::IOStreamTransport.new(StringIO.new(+""), utf8)).write_binary("\xFF\xFE".b) },
             step { klass.new(Thrift::IOStreamTransport.new(StringIO.new(+""), read_only)).write_byte(1) }]
    [steps, state(utf8, read_only)]
  end
  scenario.call("HTTP response read past its end") do
    trans = http(data + data.byteslice(0, 9))
    prot = klass.new(trans)
    steps = [step { CodecTest::Small.new.tap { |s| s.read(prot) } }, step { CodecTest::Small.new.read(prot) },
             step { prot.read_byte }, step { prot.read_string }]
    [steps, state(trans.instance_variable_get(:@inbuf))]
  end
  scenario.call("HTTP request buffer and a binary written through it") do
    trans = Thrift::HTTPClientTransport.new("http://localhost:1/rpc")
    prot = klass.new(trans)
    utf8 = +"ab"
    steps = [step { prot.write_binary(utf8) }, step { utf8.encoding.name }, step { SAMPLE.write(prot) },
             step { trans.instance_variable_get(:@outbuf).b }]
    [steps, []]
  end
end
$stdout.write Marshal.dump(results)
