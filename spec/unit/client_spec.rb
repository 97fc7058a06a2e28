# frozen_string_literal: true

require_relative "../../test_support/codec_types"

CodecTypes.load!

# The native Thrift::Client methods in process: what a call allocates. Their calls and results against the library's:
# spec/integration/client_spec.rb.
RSpec.describe "Thrift::Client" do
  let(:client_class) { Class.new { include Thrift::Client } }
  master = Thrift::Client.private_method_defined?(:write_message)
  # 0.19 and master read the message begin in receive_message_begin (the generated code calls it first).
  begin_first = Thrift::Client.method_defined?(:receive_message_begin)

  it "sends a call allocating only the caller's Hash, the arguments written from the args class's reused instance" do
    trans = Thrift::MemoryBufferTransport.new
    client = client_class.new(Thrift::BinaryProtocolAccelerated.new(trans))
    client.send_message("ping", CodecTest::Leaf, id: 4) # the class's first: its defaults Hash, then its instance
    # The Hash literal. No struct, no String for the setter's name, no Array; master's @pending_seqids grows within
    # its room.
    expect(allocations { client.send_message("ping", CodecTest::Leaf, id: 5) }).to eq(1)
    expect(allocations { client.send_message("ping", CodecTest::Leaf, id: 5, label: "l") }).to eq(1)
    # The default `args = {}`.
    expect(allocations { client.send_oneway_message("ping", CodecTest::Leaf) }).to eq(1)
    # Nothing held after the call: the reused instance's fields are nil again.
    label = +"held?"
    client.send_message("ping", CodecTest::Leaf, id: 6, label: label)
    expect(ObjectSpace.each_object(CodecTest::Leaf).select { |leaf| leaf.label.equal?(label) }).to eq([])
    # What ObjectSpace lets code do to the reused instance changes nothing a call writes: a field set between calls,
    # the instance frozen or extended (a new instance replaces it).
    reused = -> { ObjectSpace.each_object(CodecTest::Leaf).select { |leaf| leaf.id.nil? && leaf.label.nil? } }
    # The message's bytes without its sequence id (master's client counts it up per call).
    sent = lambda do |args|
      trans.read(trans.available)
      client.send_message("ping", CodecTest::Leaf, args)
      bytes = trans.read(trans.available)
      bytes.byteslice(0, 12) + bytes.byteslice(16..)
    end
    plain = sent.call(id: 9)
    reused.call.each { |leaf| leaf.label = "meddled" }
    expect(sent.call(id: 9)).to eq(plain)
    reused.call.each(&:freeze)
    expect(sent.call(id: 9)).to eq(plain)
    reused.call.each { |leaf| leaf.extend(Module.new) unless leaf.frozen? }
    expect(sent.call(id: 9)).to eq(plain)
    expect(allocations { client.send_message("ping", CodecTest::Leaf, id: 5) }).to eq(1)
    # An args class with a setter of its own gets a new instance per call, as before.
    own_setter = Class.new(CodecTest::Leaf) do
      def id=(value)
        super
      end
    end
    expect(allocations { client.send_message("ping", own_setter, id: 1) }).to eq(2)
  end

  # rpc/direct.rs calls our protocol's and transport's methods without dispatch while they are ours: methods
  # prepended later, on the protocol, on BaseProtocol (`trans`) and on the transport, must see their calls.
  it "calls protocol and transport methods changed after a first call, as the library does" do
    code = <<~RUBY
      require #{File.expand_path("../../test_support/codec_types", __dir__).inspect}
      CodecTypes.load!
      client_class = Class.new { include Thrift::Client }
      [["binary", Thrift::FramedTransport], ["compact", Thrift::BufferedTransport]].map do |protocol, layer|
        out = Thrift::MemoryBufferTransport.new
        prot = Accelerator.protocol_class(protocol).new(layer.new(out))
        client = client_class.new(prot)
        client.send_message("ping", CodecTest::Leaf, id: 1)
        calls = []
        recorder = lambda do |*names|
          Module.new do
            names.each { |name| define_method(name) { |*args| calls << name; super(*args) } }
          end
        end
        prot.class.prepend(recorder.call(:write_message_begin, :write_message_end))
        Thrift::BaseProtocol.prepend(recorder.call(:trans))
        layer.prepend(recorder.call(:flush))
        # The client's own methods (rpc/client/own.rs), changed in Thrift::Client itself.
        own = Thrift::Client.private_method_defined?(:write_message) ? %i[write_message next_seqid!] : %i[send_message_args]
        Thrift::Client.prepend(recorder.call(*own))
        client.send_message("ping", CodecTest::Leaf, id: 2)
        [calls, out.read(out.available)]
      end.then { |r| $stdout.write Marshal.dump(r) }
    RUBY
    # Pure Ruby's protocol calls `trans` for each of its writes: compared with the C accelerator, which makes the
    # library's calls of the client and the struct code's.
    runs = %w[c ours].to_h { |a| [a, Marshal.load(ChildRuby.eval(code, accelerator: a, binmode: true))] }
    expect(runs["ours"]).to eq(runs["c"])
    expect(runs["ours"].map(&:first)).to all(include(:write_message_begin, :write_message_end, :trans, :flush))
    # (Ruby passes a module prepended to Thrift::Client on to its includers once: the first client sees it.)
    expect(runs["ours"][0][0]).to include(:write_message).or(include(:send_message_args))
  end

  it "receives a reply allocating the result and what it holds (0.19, master: the message begin's name and Array)" do
    out = Thrift::MemoryBufferTransport.new
    prot = Thrift::BinaryProtocolAccelerated.new(out)
    2.times do |seqid|
      prot.write_message_begin("ping", Thrift::MessageTypes::REPLY, seqid)
      CodecTest::Leaf.new(id: 7, label: "seven").write(prot)
      prot.write_message_end
    end
    client = client_class.new(Thrift::BinaryProtocolAccelerated.new(out))
    received = nil
    objects = allocations do
      if begin_first
        client.instance_variable_get(:@pending_seqids)&.push(0, 1)
        fname, mtype, rseqid = client.receive_message_begin
        client.validate_message_begin(fname, mtype, rseqid, "ping") if master
      end
      received = client.receive_message(CodecTest::Leaf)
    end
    expect(received).to eq(CodecTest::Leaf.new(id: 7, label: "seven"))
    # The Leaf and its String. 0.14-0.17's receive_message reads only the message type (no name, no Array); 0.19's and
    # master's receive_message_begin answer the name and their Array (read_message_begin's, which they drop, is not
    # made: our protocol's reader answers them the three values).
    expect(objects).to eq(begin_first ? 4 : 2)
  end
end
