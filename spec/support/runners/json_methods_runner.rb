# frozen_string_literal: true

# JsonProtocol's own read and write methods, called one by one, with one accelerator per process:
#   ruby json_methods_runner.rb ACCELERATOR SEED COUNT -> Marshal [[write run, read run, mutated read run], ...]
# Each program (drawn from SEED) is a random nest of messages, structs, fields, maps, lists, sets and scalars written
# with the protocol's write methods, mostly with the arguments a generated struct would give, sometimes with odd ones
# (nil, a Bignum, a Float for an Integer, a String in another encoding or with broken bytes, an unknown type id, an
# extra end). The bytes are then read back with the matching read methods, and again after one byte is changed.
# A run is [[outcome of each call], state afterwards]: an outcome is the returned value (a context object as its
# class and flags; a String with its encoding) or the exception (outcome.rb, the message's bytes); the state is the
# bytes written (or left to read and the read position), the reader's held byte and the contexts.
require_relative "../../../test_support/accelerator"
require_relative "outcome"
Accelerator.load(ARGV.fetch(0))
require_relative "call_programs"
$stdout.binmode

T = Thrift::Types

# An odd argument now and then: what the Ruby methods take their own way or refuse.
def odd(r)
  [nil, 2**70, -2**64, 1.5, "12", :sym, "caf\xE9".dup.force_encoding("ISO-8859-1"), "a\xFFb".dup.force_encoding("UTF-8"),
   "bin\xC3\xA9".b, "ascii".encode("US-ASCII"), Float::NAN, -0.0, 99, -1].sample(random: r)
end

def scalar_arg(kind, r)
  return odd(r) if r.rand(12).zero?

  case kind
  when :bool then [true, false, nil, 0].sample(random: r)
  when :byte then r.rand(-128..127)
  when :i16 then r.rand(-2**15...2**15)
  when :i32 then r.rand(-2**31...2**31)
  when :i64 then [r.rand(-2**63...2**63), r.rand(-9..9)].sample(random: r)
  when :double then [r.rand * 10**r.rand(-5..20), -r.rand, 0.0, Float::INFINITY, -Float::INFINITY, Float::NAN, 1e-310,
                     r.rand(-1000..1000).to_f].sample(random: r)
  when :string then ["", "plain", "q\"\\/\n\t\u0001", "café €", "😀", "x" * r.rand(0..40), "\u007f"].sample(random: r)
  when :binary then Random.new(r.rand(1000)).bytes(r.rand(0..12))
  end
end

PROGRAMS = CallPrograms.new(scalar: method(:scalar_arg))

def program(r)
  calls = []
  calls << [:write_message_begin, ["call", "", "é"].sample(random: r), r.rand(1..4), r.rand(2**31)] if r.rand(2).zero?
  PROGRAMS.value_calls([T::STRUCT, T::MAP, T::LIST, T::I32, T::STRING].sample(random: r), 3, r, calls)
  calls << [:write_message_end] if calls.first&.first == :write_message_begin
  calls << [%i[write_struct_end write_list_end write_i32].sample(random: r), *([7] if r.rand(2).zero?)] if r.rand(8).zero?
  calls
end

def outcome(value)
  case value
  when Thrift::JSONContext then [value.class.name, value.instance_variables.sort.map { |i| value.instance_variable_get(i) }]
  when String then [value.b, value.encoding.name]
  when Float then value.nan? ? [:nan, [value].pack("G").b] : value
  when Array then value.map { |v| outcome(v) }
  else value
  end
end

def contexts(prot)
  c = prot.instance_variable_get(:@context)
  [outcome(c), prot.instance_variable_get(:@contexts).map { |x| outcome(x) }]
end

# Each call, its outcome; a failed call does not stop the run (the protocol goes on from what it left).
def run(prot, calls)
  calls.map do |name, *args|
    outcome(prot.public_send(name, *args))
  rescue StandardError, NotImplementedError => e
    Outcome.error(e, e.message.b)
  end
end

MUTATIONS = "{}[]:,\"\\0159eE.-uN a".b

def read_state(trans, prot)
  reader = prot.instance_variable_get(:@reader)
  held = reader.instance_variable_get(:@hasData) ? reader.instance_variable_get(:@data) : nil
  [trans.available, trans.instance_variable_get(:@index), held, contexts(prot)]
end

seed = Integer(ARGV.fetch(1))
results = Array.new(Integer(ARGV.fetch(2))) do |i|
  r = Random.new(seed * 10_000 + i)
  calls = program(r)
  out = Thrift::MemoryBufferTransport.new
  writer = Thrift::JsonProtocol.new(out)
  written = run(writer, calls)
  bytes = out.read(out.available)
  write_run = [written, [bytes, contexts(writer)]]
  reads = CallPrograms.reads(calls)
  read_runs = [bytes, bytes.dup.tap { |m| m.setbyte(r.rand(m.bytesize), MUTATIONS.getbyte(r.rand(MUTATIONS.bytesize))) unless m.empty? }]
  read_runs = read_runs.map do |input|
    trans = Thrift::MemoryBufferTransport.new(input)
    reader = Thrift::JsonProtocol.new(trans)
    [run(reader, reads), read_state(trans, reader)]
  end
  [write_run, *read_runs]
end
$stdout.write Marshal.dump(results)
