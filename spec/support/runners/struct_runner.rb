# frozen_string_literal: true

# Struct round trips with one accelerator, for the differential specs (one process per accelerator).
#   ruby struct_runner.rb ACCELERATOR write SEED COUNT   -> Marshal [bytes of each random Everything]
#   ruby struct_runner.rb ACCELERATOR read CLASS < Marshal [bytes, ...] -> Marshal [inspect, or exception (outcome.rb)]
#   ruby struct_runner.rb ACCELERATOR encode < Marshal [struct, ...]   -> Marshal [bytes of each]
#   ruby struct_runner.rb ACCELERATOR read-rss CLASS < Marshal [bytes, ...]
#       -> Marshal [[outcome, ...], growth of peak RSS in kB, growth of peak virtual size in kB]
#   ruby struct_runner.rb ACCELERATOR shapes CLASS < Marshal [bytes, ...]
#       -> Marshal [the ivar names of each decoded struct and of every struct it holds, in order, depth first]
#   ruby struct_runner.rb ACCELERATOR calls SEED          -> Marshal [write call log, read call log] of a recording protocol
#
# TRANSPORT=framed (a FramedTransport over a MemoryBufferTransport), framed-pipe, framed-socket (over a Thrift::Socket
# that receives the input, for reading only), buffered (a BufferedTransport over a PipeTransport) reads each input's
# bytes through that stack (frames, for the framed ones), and writes through it, flushing after each struct and
# answering what reached the transport beneath. TRANSPORT=header or header-zlib (thrift master: pure-master,
# c-master, ours-master) does the same with a HeaderProtocol (PROTOCOL its sub-protocol) over a MemoryBufferTransport,
# with the ZLIB transform for header-zlib (header-socket: over a Thrift::Socket, for reading only); with DISPATCH=1, a
# subclass of HeaderProtocol. TRANSPORT=iostream (an IOStreamTransport over StringIOs) or http (an
# HTTPClientTransport whose response, as `flush` leaves it, is a StringIO of the input) writes answer what reached the
# output StringIO or the request buffer, and read-stream ends with where the input StringIO was left.
# PROTOCOL=plain: Thrift::BinaryProtocol whatever the accelerator.
require_relative "../../../test_support/accelerator"
require_relative "../../../test_support/codec_types"
require_relative "../../../test_support/codec_samples"
require_relative "outcome"
require "stringio"

Accelerator.load(ARGV.fetch(0))
require_relative "../fixtures/pipe_transport"
CodecTypes.load!
$stdout.binmode

TRANSPORT = ENV.fetch("TRANSPORT", "memory")
HEADER = TRANSPORT.start_with?("header")

# DISPATCH=1 reads through a subclass of the protocol: the dispatch path instead of the fast path.
BASE_PROTOCOL = HEADER ? Thrift::HeaderProtocol : Accelerator.protocol_class
PROTOCOL_CLASS = ENV["DISPATCH"] && !ENV["DECORATOR"] ? Class.new(BASE_PROTOCOL) : BASE_PROTOCOL

# DECORATOR=multiplexed or stored wraps every protocol in a MultiplexedProtocol or StoredMessageProtocol (with
# DISPATCH=1, a subclass of it, over the plain protocol).
DECORATOR = ENV["DECORATOR"]&.then do |d|
  klass = { "multiplexed" => Thrift::MultiplexedProtocol, "stored" => Thrift::StoredMessageProtocol }.fetch(d)
  ENV["DISPATCH"] ? Class.new(klass) : klass
end

def decorated(prot)
  return prot unless DECORATOR

  DECORATOR <= Thrift::MultiplexedProtocol ? DECORATOR.new(prot, "Svc") : DECORATOR.new(prot, ["m", 1, 0])
end

# A protocol of `klass` over `trans`: a HeaderProtocol gets its sub-protocol and transform; DECORATOR wraps it.
def protocol_over(trans, klass = PROTOCOL_CLASS)
  decorated(plain_protocol_over(trans, klass))
end

def plain_protocol_over(trans, klass)
  return klass.new(trans) unless HEADER

  id = ENV.fetch("PROTOCOL", "binary") == "compact" ? Thrift::HeaderSubprotocolID::COMPACT : Thrift::HeaderSubprotocolID::BINARY
  klass.new(trans, nil, id).tap { |p| p.add_transform(Thrift::HeaderTransformID::ZLIB) if TRANSPORT == "header-zlib" }
end

# The transport stack to read `bytes` through (empty for writing).
def stack(bytes = "".b)
  case TRANSPORT
  when "memory", "header", "header-zlib" then Thrift::MemoryBufferTransport.new(bytes)
  when "framed" then Thrift::FramedTransport.new(Thrift::MemoryBufferTransport.new(bytes))
  when "framed-pipe" then Thrift::FramedTransport.new(PipeTransport.new(bytes))
  when "buffered" then Thrift::BufferedTransport.new(PipeTransport.new(bytes))
  when "framed-socket" then Thrift::FramedTransport.new(socket_with(bytes))
  when "header-socket" then socket_with(bytes)
  when "iostream" then Thrift::IOStreamTransport.new(StringIO.new(bytes), StringIO.new(+""))
  when "http"
    Thrift::HTTPClientTransport.new("http://localhost:1/rpc").tap do |h|
      h.instance_variable_set(:@inbuf, StringIO.new(bytes)) # what `flush` leaves: the response
      h.instance_variable_set(:@response_code, 200)
    end
  else abort "TRANSPORT: memory, framed, framed-pipe, framed-socket, buffered, header, header-zlib, iostream or http"
  end
end

# Where an IOStreamTransport's or HTTPClientTransport's writes went, and how far its input was read.
def written(trans)
  case TRANSPORT
  when "iostream" then trans.instance_variable_get(:@output).string.b
  when "http" then trans.instance_variable_get(:@outbuf).b
  end
end

def input_position(trans)
  io = trans.instance_variable_get(TRANSPORT == "http" ? :@inbuf : :@input)
  [io.pos, io.eof?]
end

# A Thrift::Socket on one end of a UNIX socket pair whose other end sent `bytes` (a few KiB at most) and closed.
def socket_with(bytes)
  require "socket"
  ours, theirs = UNIXSocket.pair
  theirs.write(bytes)
  theirs.close
  Thrift::Socket.new.tap { |s| s.handle = ours }
end

# Writes `obj` through a new stack and answers the bytes that reached the bottom.
def encode(obj)
  trans = stack
  prot = protocol_over(trans, BASE_PROTOCOL)
  obj.write(prot)
  prot.trans.flush if HEADER
  return trans.read(trans.available) if TRANSPORT == "memory" || HEADER
  return written(trans) if %w[iostream http].include?(TRANSPORT)

  trans.flush
  inner = trans.instance_variable_get(:@transport)
  inner.respond_to?(:unread) ? inner.unread : inner.read(inner.available)
end

def decode(klass, bytes, protocol_class = PROTOCOL_CLASS)
  obj = klass.new
  obj.read(protocol_over(stack(bytes), protocol_class))
  obj.inspect
rescue StandardError => e
  Outcome.error(e)
end

case ARGV.fetch(1)
when "write"
  r = Random.new(Integer(ARGV.fetch(2)))
  out = Array.new(Integer(ARGV.fetch(3))) { encode(CodecSamples.everything(r)) }
  $stdout.write Marshal.dump(out)
when "read"
  klass = CodecTest.const_get(ARGV.fetch(2))
  $stdout.write Marshal.dump(Marshal.load($stdin.read).map { |bytes| decode(klass, bytes) })
when "encode"
  out = Marshal.load($stdin.read).map { |obj| encode(obj) }
  $stdout.write Marshal.dump(out)
when "shapes"
  # The order of a struct's ivars is its object shape on Ruby 3.2+ (and its ivar table on 3.1).
  shape = lambda do |v|
    case v
    when Thrift::Struct, Thrift::Union then [v.class.name, v.instance_variables, *v.instance_variables.map { |i| shape.call(v.instance_variable_get(i)) }.compact]
    when Array, Set then v.filter_map { |e| shape.call(e) }.then { |l| l.empty? ? nil : l }
    when Hash then v.flat_map { |k, e| [shape.call(k), shape.call(e)] }.compact.then { |l| l.empty? ? nil : l }
    end
  end
  klass = CodecTest.const_get(ARGV.fetch(2))
  out = Marshal.load($stdin.read).map do |bytes|
    obj = klass.new
    obj.read(protocol_over(stack(bytes)))
    shape.call(obj)
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
  recording = Class.new(BASE_PROTOCOL) do
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
  out = stack
  writer = protocol_over(out, recording)
  sample.write(writer)
  writer.trans.flush if HEADER
  bytes = if TRANSPORT == "memory" || HEADER
            out.read(out.available)
          else
            out.flush
            inner = out.instance_variable_get(:@transport)
            inner.respond_to?(:unread) ? inner.unread : inner.read(inner.available)
          end
  reader = protocol_over(stack(bytes), recording)
  CodecTest::Everything.new.read(reader)
  $stdout.write Marshal.dump([writer.log, reader.log])
when "read-stream"
  # COUNT structs read one after the other from one stack over all the input's bytes (frames and refills falling
  # anywhere in them), then what a read past the end raises.
  klass = CodecTest.const_get(ARGV.fetch(2))
  trans = stack(Marshal.load($stdin.read))
  prot = protocol_over(trans)
  outcomes = Array.new(Integer(ARGV.fetch(3)) + 1) do
    obj = klass.new
    obj.read(prot)
    obj.inspect
  rescue StandardError => e
    Outcome.error(e, Outcome.first_line(e))
  end
  # Where a StringIO input was left (by each read, and by the failure at the end).
  outcomes << input_position(trans) if %w[iostream http].include?(TRANSPORT)
  $stdout.write Marshal.dump(outcomes)
end
