# frozen_string_literal: true

# Thrift::MultiplexedProcessor#process with one accelerator, for the differential spec of the native one
# (rpc/multiplexed.rs): one process per accelerator, the same cases, each a message read by a real protocol (binary or
# compact, over a memory buffer) or by a recording double whose read_message_begin answers what the case says.
#   ruby multiplexed_runner.rb ACCELERATOR -> Marshal [[case name, outcome, what the services saw, reply bytes], ...]
#   (GC_STRESS=1: each `process` under GC.stress)
# outcome: [:ok, inspect of what `process` answered] or the exception; what the services saw: for each `process` a
# service was asked, its name, the protocol's class and what that protocol's read_message_begin answered.
require_relative "../../../test_support/accelerator"
require_relative "../../../test_support/gc_stress"
require_relative "outcome"

Accelerator.load(ARGV.fetch(0))
require_relative "../fixtures/rpc_doubles"
$stdout.binmode

T = Thrift::MessageTypes
MASTER = Thrift::MultiplexedProcessor.method_defined?(:register_default)

# A service that records what it is handed and answers a reply of its own.
class Service
  def initialize(name, seen) = (@name, @seen = name, seen)

  def process(iprot, oprot)
    begin_answer = iprot.read_message_begin
    @seen << [@name, iprot.class.name, begin_answer, iprot.instance_variables]
    Args.new.read(iprot)
    iprot.read_message_end
    oprot.write_message_begin(begin_answer[0].to_s, T::REPLY, begin_answer[2])
    Result.new(success: "#{@name} served").write(oprot)
    oprot.write_message_end
    :"#{@name}_served"
  end
end

class MultiplexedSubclass < Thrift::MultiplexedProcessor; end

# A service made as generated processors are (Thrift::Processor's process, read_args, write_result): the native
# processor reads the StoredMessageProtocol's header itself.
class PingProcessor
  include Thrift::Processor

  def process_ping(seqid, iprot, oprot)
    args = read_args(iprot, Args)
    write_result(Result.new(success: "pinged #{args.n} via #{iprot.class.name}"), oprot, "ping", seqid)
  end
end

def protocol_class(kind) = kind == :compact ? Thrift::CompactProtocol : Accelerator.protocol_class("binary")

# A message's bytes; `strict: false`, a binary header of the old style, and `raw: true`, a binary header of the strict
# style, made by hand (a name of any bytes).
def request(kind, name, type = T::CALL, seqid = 7, strict: true, raw: false)
  out = Thrift::MemoryBufferTransport.new
  prot = protocol_class(kind).new(out)
  if !strict
    out.write([name.bytesize].pack("N") + name.b + [type].pack("C") + [seqid].pack("N"))
  elsif raw
    out.write([0x80010000 | type, name.bytesize].pack("NN") + name.b + [seqid].pack("N"))
  else
    prot.write_message_begin(name, type, seqid)
  end
  Args.new(n: 3).write(prot)
  prot.write_message_end
  out.read(out.available)
end

# [iprot, oprot, reply reader] over real protocols, or a double answering `begin_answer` (the args' bytes after it).
def real(kind, bytes, strict: true)
  iprot = strict ? protocol_class(kind).new(Thrift::MemoryBufferTransport.new(bytes)) : protocol_class(kind).new(Thrift::MemoryBufferTransport.new(bytes), false, true)
  reply = Thrift::MemoryBufferTransport.new
  [iprot, protocol_class(kind).new(reply), -> { reply.read(reply.available) }]
end

def double(begin_answer)
  log = []
  trans = TransportDouble.new(body(Args.new(n: 3)))
  trans.log = log
  prot = ProtocolDouble.new(trans, log, { read_message_begin: ->(*) { begin_answer } })
  reply = Thrift::MemoryBufferTransport.new
  [prot, Thrift::BinaryProtocol.new(reply), -> { reply.read(reply.available) }]
end

CASES = [
  ["binary: a call", -> { real(:binary, request(:binary, "Calc:ping")) }],
  ["compact: a call", -> { real(:compact, request(:compact, "Calc:ping")) }],
  ["binary: a oneway call", -> { real(:binary, request(:binary, "Calc:fire", T::ONEWAY)) }],
  ["binary: another service", -> { real(:binary, request(:binary, "Echo:ping", T::CALL, 8)) }],
  ["binary: a REPLY", -> { real(:binary, request(:binary, "Calc:ping", T::REPLY)) }],
  ["binary: an EXCEPTION", -> { real(:binary, request(:binary, "Calc:ping", T::EXCEPTION)) }],
  ["binary: no colon", -> { real(:binary, request(:binary, "ping")) }],
  ["binary: no colon, with a default processor", -> { real(:binary, request(:binary, "ping")) }, :default],
  ["binary: an unknown service", -> { real(:binary, request(:binary, "Nope:ping")) }],
  ["binary: two colons", -> { real(:binary, request(:binary, "Calc:a:b")) }],
  ["binary: a trailing colon", -> { real(:binary, request(:binary, "Calc:")) }],
  ["binary: a colon alone", -> { real(:binary, request(:binary, ":")) }],
  ["binary: colons around", -> { real(:binary, request(:binary, "::Calc::")) }],
  ["binary: a leading colon", -> { real(:binary, request(:binary, ":ping")) }],
  ["compact: a long method name", -> { real(:compact, request(:compact, "Calc:#{'m' * 300}")) }],
  ["binary: a multi-byte name", -> { real(:binary, request(:binary, "Calc:caf\u00e9")) }],
  ["binary: a name of broken UTF-8", -> { real(:binary, request(:binary, "Calc:\xFF".b, raw: true)) }],
  ["binary: a name of broken UTF-8 without a colon", -> { real(:binary, request(:binary, "C\xFFalc".b, raw: true)) }],
  ["binary: an old-style header, a binary name", lambda {
    real(:binary, request(:binary, "Calc:caf\xC3".b, strict: false), strict: false)
  }],
  ["binary: the header cut in the name", -> { real(:binary, request(:binary, "Calc:ping").byteslice(0, 9)) }],
  ["double: a type that is no Integer", -> { double(["Calc:ping", nil, 1]) }],
  ["double: a Symbol name", -> { double([:"Calc:ping", T::CALL, 1]) }],
  ["double: a frozen name", -> { double(["Calc:ping".freeze, T::CALL, 1]) }],
  ["double: a US-ASCII name", -> { double(["Calc:ping".encode("US-ASCII"), T::CALL, 1]) }],
  ["double: no Array", -> { double("Calc:ping") }],
  ["a subclass", -> { real(:binary, request(:binary, "Calc:ping")) }, :subclass],
  ["binary: a Thrift::Processor service", -> { real(:binary, request(:binary, "Proc:ping")) }],
  ["compact: a Thrift::Processor service, an unknown method", -> { real(:compact, request(:compact, "Proc:pong")) }],
  ["processors in a Hash subclass that hides them", -> { real(:binary, request(:binary, "Calc:ping")) }, :hiding_hash],
  ["processors in a compare_by_identity Hash", -> { real(:binary, request(:binary, "Calc:ping")) }, :identity],
  ["processors under frozen keys not interned", -> { real(:compact, request(:compact, "Calc:ping")) }, :frozen_keys],
  ["a processor under a BINARY key", -> { real(:binary, request(:binary, "Bin:ping")) }],
  # Last: they change StoredMessageProtocol for the rest of the process.
  ["StoredMessageProtocol.new redefined", -> { real(:binary, request(:binary, "Calc:ping")) }, :stored_new],
  ["StoredMessageProtocol#initialize prepended", -> { real(:binary, request(:binary, "Echo:ping")) }, :stored_init],
].freeze

class HidingHash < Hash
  def has_key?(_key) = false
end

out = CASES.map do |name, setup, variant|
  iprot, oprot, reply = setup.call
  seen = []
  mux = (variant == :subclass ? MultiplexedSubclass : Thrift::MultiplexedProcessor).new
  mux.register_processor("Calc", Service.new("Calc", seen))
  mux.register_processor("Echo", Service.new("Echo", seen))
  mux.register_processor("", Service.new("empty", seen))
  mux.register_processor("Proc", PingProcessor.new(nil))
  mux.register_default(Service.new("default", seen)) if variant == :default && MASTER
  if variant == :hiding_hash
    mux.instance_variable_set(:@actual_processors, HidingHash.new.merge!(mux.instance_variable_get(:@actual_processors)))
  end
  mux.register_processor("Bin".b, Service.new("Bin", seen))
  mux.instance_variable_get(:@actual_processors).compare_by_identity if variant == :identity
  if variant == :frozen_keys
    processors = mux.instance_variable_get(:@actual_processors)
    mux.instance_variable_set(:@actual_processors, processors.to_h { |k, v| [String.new(k).freeze, v] })
  end
  if variant == :stored_new
    Thrift::StoredMessageProtocol.define_singleton_method(:new) { |*a| super(*a).tap { |p| p.instance_variable_set(:@new, 1) } }
  end
  if variant == :stored_init
    Thrift::StoredMessageProtocol.prepend(Module.new { def initialize(p, b) = super(p, b.map { |x| x.is_a?(String) ? x.upcase : x }) })
  end
  outcome = begin
    GC.stress = GcStress.setting if ENV["GC_STRESS"]
    answer = mux.process(iprot, oprot)
    GC.stress = false
    Outcome.ok(answer.inspect)
  rescue StandardError => e
    GC.stress = false
    Outcome.failed(e, Outcome.first_line(e).gsub(/0x\h+/, "0x"))
  end
  [name, outcome, seen.map(&:inspect), reply.call.inspect]
end
$stdout.write Marshal.dump(out)
