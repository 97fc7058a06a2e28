# frozen_string_literal: true

# Thrift::BinaryProtocol's own methods (the plain protocol, pure Ruby in every thrift; ours natively), called one by
# one, with one accelerator per process:
#   ruby binary_methods_runner.rb ACCELERATOR SEED COUNT -> Marshal [[write run, read run, damaged read run], ...]
# Each program (drawn from SEED) is a random nest of messages, structs, fields, maps, lists, sets and scalars written
# with the protocol's write methods, mostly with the arguments a generated struct would give, sometimes with odd ones
# (nil, a Bignum, a Float or a String for an Integer, a String in another encoding, a frozen one, an out-of-range
# type or size), through one of the transports a fast path reads or writes in place (a MemoryBufferTransport, a
# FramedTransport over one, a BufferedTransport over StringIOs, an IOStreamTransport over StringIOs, an
# HTTPClientTransport's request buffer and response) or a subclass of the protocol, with strict_read and
# strict_write drawn too. The bytes are then read back with the matching read methods, and again after one byte is
# changed or the bytes are cut short.
# A run is [[outcome of each call], state afterwards]: an outcome is the value returned (a String with its encoding;
# a transport's buffer as its bytes) or the exception (outcome.rb, tagged); the state is the bytes written, or the
# read position and what is left to read.
require_relative "../../../test_support/accelerator"
require_relative "outcome"
Accelerator.load(ARGV.fetch(0))
require "stringio"
require_relative "call_programs"
$stdout.binmode

T = Thrift::Types
# A subclass that overrides nothing: its methods are the library's (ours fall back to them).
SubclassProtocol = Class.new(Thrift::BinaryProtocol)
UUIDS = defined?(Thrift::UUID)

def odd(r)
  [nil, 2**70, -2**64, 2**40, -2**40, 1.5, "12", :sym, "caf\xE9".dup.force_encoding("ISO-8859-1"),
   "a\xFFb".dup.force_encoding("UTF-8"), "bin\xC3\xA9".b, "ascii".encode("US-ASCII"), "frozen".b.freeze,
   "utf-16".encode("UTF-16LE"), Float::NAN, -0.0, 200, 40_000, -1, 2**31, 2**63].sample(random: r)
end

def scalar_arg(kind, r)
  return odd(r) if r.rand(10).zero?

  case kind
  when :bool then [true, false, nil, 0, "x"].sample(random: r)
  when :byte then r.rand(-128..127)
  when :i16 then r.rand(-2**15...2**15)
  when :i32 then r.rand(-2**31...2**31)
  when :i64 then [r.rand(-2**63...2**63), r.rand(-9..9), 2**62, -2**62 - 1].sample(random: r)
  when :double then [r.rand * 10**r.rand(-5..20), -r.rand, 0.0, Float::INFINITY, Float::NAN, r.rand(-1000..1000)].sample(random: r)
  when :string then ["", "plain", "café €", "😀", "x" * r.rand(0..300), "q\"\n"].sample(random: r)
  when :binary then [Random.new(r.rand(1000)).bytes(r.rand(0..40)), "".b].sample(random: r)
  when :uuid then ["00112233-4455-6677-8899-aabbccddeeff", "00112233-4455-6677-8899-AABBCCDDEEFF".b, "nope",
                   "00112233-4455-6677-8899-aabbccddeeff".encode("US-ASCII")].sample(random: r)
  end
end

PROGRAMS = CallPrograms.new(scalar: method(:scalar_arg), uuid: UUIDS, odd_headers: true, field_types: [99, 300, nil],
                            field_ids: [40_000, 32_767])

def program(r)
  calls = []
  if r.rand(2).zero?
    name = ["call", "", "é", "n" * 200, "latin\xE9".dup.force_encoding("ISO-8859-1"), nil].sample(random: r)
    calls << [:write_message_begin, name, [1, 2, 3, 4, 0, 127, 200, -1].sample(random: r),
              [r.rand(2**31), -5, 2**31, nil].sample(random: r)]
  end
  PROGRAMS.value_calls([T::STRUCT, T::MAP, T::LIST, T::I32, T::STRING].sample(random: r), 3, r, calls)
  calls << [:write_message_end] if calls.first&.first == :write_message_begin
  calls
end

def outcome(value)
  case value
  when String then [value.b, value.encoding.name, value.frozen?]
  when Float then value.nan? ? [:nan, [value].pack("G").b] : value
  when Array then value.map { |v| outcome(v) }
  when StringIO then [:string_io, value.string.b]
  else value
  end
end

def run(prot, calls)
  calls.map do |name, *args|
    Outcome.ok(outcome(prot.public_send(name, *args)))
  rescue StandardError => e
    Outcome.failed(e, Outcome.first_line(e).b)
  end
end

TRANSPORTS = %w[memory framed buffered iostream iostream-utf8 http].freeze

# [transport, what its writes end up in]
def writer(kind)
  case kind
  when "memory" then m = Thrift::MemoryBufferTransport.new; [m, -> { m.instance_variable_get(:@buf) }]
  when "framed" then m = Thrift::MemoryBufferTransport.new; f = Thrift::FramedTransport.new(m); [f, -> { f.instance_variable_get(:@wbuf) }]
  when "buffered"
    io = StringIO.new(+"".b)
    b = Thrift::BufferedTransport.new(Thrift::IOStreamTransport.new(StringIO.new(+""), io))
    [b, -> { b.instance_variable_get(:@wbuf) }]
  when "iostream", "iostream-utf8"
    io = StringIO.new(kind == "iostream" ? +"".b : +"")
    [Thrift::IOStreamTransport.new(StringIO.new(+""), io), -> { [io.string, io.string.encoding.name, io.pos] }]
  when "http"
    h = Thrift::HTTPClientTransport.new("http://localhost:1/")
    [h, -> { h.instance_variable_get(:@outbuf) }]
  end
end

# [transport, its read state]
def reader(kind, bytes)
  case kind
  when "memory"
    m = Thrift::MemoryBufferTransport.new(bytes)
    [m, -> { [m.instance_variable_get(:@buf).b, m.instance_variable_get(:@index)] }]
  when "framed"
    m = Thrift::MemoryBufferTransport.new([bytes.bytesize].pack("N") + bytes)
    f = Thrift::FramedTransport.new(m)
    [f, -> { [f.instance_variable_get(:@rbuf)&.b, f.instance_variable_get(:@index), m.available] }]
  when "buffered"
    io = StringIO.new(bytes)
    b = Thrift::BufferedTransport.new(Thrift::IOStreamTransport.new(io, StringIO.new(+"")))
    [b, -> { [b.instance_variable_get(:@rbuf)&.b, b.instance_variable_get(:@index), io.pos] }]
  when "iostream", "iostream-utf8"
    io = StringIO.new(kind == "iostream" ? bytes : bytes.dup.force_encoding("UTF-8"))
    [Thrift::IOStreamTransport.new(io, StringIO.new(+"")), -> { [io.pos, io.eof?] }]
  when "http"
    h = Thrift::HTTPClientTransport.new("http://localhost:1/")
    io = StringIO.new(bytes)
    h.instance_variable_set(:@inbuf, io) # what flush leaves
    h.instance_variable_set(:@response_code, 200)
    [h, -> { [io.pos, io.eof?] }]
  end
end

def protocol(kind, trans, strict)
  case kind
  when :plain then Thrift::BinaryProtocol.new(trans, *strict)
  when :subclass then SubclassProtocol.new(trans, *strict)
  end
end

def damaged(bytes, r)
  return bytes if bytes.empty?

  if r.rand(3).zero?
    bytes.byteslice(0, r.rand(bytes.bytesize))
  else
    bytes.dup.tap { |m| m.setbyte(r.rand(m.bytesize), [0, 0xff, 0x80, 0x7f, r.rand(256)].sample(random: r)) }
  end
end

seed = Integer(ARGV.fetch(1))
results = Array.new(Integer(ARGV.fetch(2))) do |i|
  r = Random.new(seed * 10_000 + i)
  calls = program(r)
  kind = TRANSPORTS.sample(random: r)
  prot_kind = r.rand(6).zero? ? :subclass : :plain
  strict = [[], [true, true], [false, false], [true, false], [false, true], [nil, 1]].sample(random: r)
  trans, written = writer(kind)
  write_run = [run(protocol(prot_kind, trans, strict), calls), outcome(written.call)]
  bytes = (kind.start_with?("iostream") ? written.call[0] : written.call).b
  reads = CallPrograms.reads(calls)
  read_runs = [bytes, damaged(bytes, r)].map do |input|
    rtrans, state = reader(kind, input)
    [run(protocol(prot_kind, rtrans, strict), reads), outcome(state.call)]
  end
  [write_run, *read_runs]
end
$stdout.write Marshal.dump(results)
