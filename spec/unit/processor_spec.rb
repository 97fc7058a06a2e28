# frozen_string_literal: true

require_relative "../../test_support/codec_types"

CodecTypes.load!

# The native Thrift::Processor#process in process: what serving a call allocates. Its calls, replies and logged lines
# against the library's: spec/integration/processor_spec.rb.
RSpec.describe "Thrift::Processor" do
  # Answers an object made once, so that the handler allocates nothing.
  answer = CodecTest::Small.new(normal: 5)
  handler = Class.new { define_method(:ping) { |_id| answer } }
  processor_class = Class.new do
    include Thrift::Processor

    def process_ping(seqid, iprot, oprot)
      args = read_args(iprot, CodecTest::Leaf)
      result = CodecTest::Level.new
      result.item = @handler.ping(args.id)
      write_result(result, oprot, "ping", seqid)
    end
  end

  [Thrift::BinaryProtocolAccelerated, Thrift::CompactProtocol].each do |protocol|
    it "serves a call over #{protocol.name.split('::').last} allocating the structs it makes and nothing else" do
      request = Thrift::MemoryBufferTransport.new
      writer = protocol.new(request)
      3.times do |seqid|
        writer.write_message_begin("ping", Thrift::MessageTypes::CALL, seqid)
        CodecTest::Leaf.new(id: seqid).write(writer)
        writer.write_message_end
      end
      reply = Thrift::MemoryBufferTransport.new
      processor = processor_class.new(handler.new)
      iprot = protocol.new(request)
      oprot = protocol.new(reply)
      processor.process(iprot, oprot)
      # The arguments and the result (the setter makes no String: lib/thrift_native/field_setters.rb): the header's
      # name stays bytes (no String, no Array), the reply is written into the buffer.
      expect(allocations { processor.process(iprot, oprot) }).to eq(2)
      reader = protocol.new(reply)
      answers = 3.times.map do
        name, type, seqid = reader.read_message_begin
        level = CodecTest::Level.new
        level.read(reader)
        reader.read_message_end
        [name, type, seqid, level.item.normal]
      end
      expect(answers).to eq((0..2).map { |i| ["ping", Thrift::MessageTypes::REPLY, i, 5] })
    end
  end

  it "makes the name a String where the processor's respond_to? is its own" do
    own = Class.new(processor_class) do
      attr_reader :asked

      def respond_to?(name, include_all = false) = (@asked = name) && super
    end
    request = Thrift::MemoryBufferTransport.new
    writer = Thrift::BinaryProtocolAccelerated.new(request)
    writer.write_message_begin("ping", Thrift::MessageTypes::CALL, 1)
    CodecTest::Leaf.new(id: 1).write(writer)
    writer.write_message_end
    processor = own.new(handler.new)
    reply = Thrift::MemoryBufferTransport.new
    expect(processor.process(Thrift::BinaryProtocolAccelerated.new(request), Thrift::BinaryProtocolAccelerated.new(reply)))
      .to be(true)
    expect(processor.asked).to eq("process_ping")
    expect(reply.available).to be > 0
  end

  # The name's ID is remembered once found (ext/thrift_native/src/rpc/method_ids.rs); whether the processor has the
  # method is still asked on every call.
  it "serves a method defined after its name was refused, and refuses it again once removed" do
    name = "later_#{Process.pid}_#{rand(1 << 30)}" # no Symbol of "process_#{name}" exists yet
    processor = Class.new(processor_class).new(handler.new)
    call = lambda do
      request = Thrift::MemoryBufferTransport.new
      writer = Thrift::BinaryProtocolAccelerated.new(request)
      writer.write_message_begin(name, Thrift::MessageTypes::CALL, 7)
      CodecTest::Leaf.new(id: 1).write(writer)
      writer.write_message_end
      reply = Thrift::MemoryBufferTransport.new
      served = processor.process(Thrift::BinaryProtocolAccelerated.new(request),
                                 Thrift::BinaryProtocolAccelerated.new(reply))
      reader = Thrift::BinaryProtocolAccelerated.new(reply)
      _, type, seqid = reader.read_message_begin
      [served, type, seqid]
    end
    refused = [false, Thrift::MessageTypes::EXCEPTION, 7]
    expect(call.call).to eq(refused)
    processor.class.define_method("process_#{name}") { |seqid, iprot, oprot| process_ping(seqid, iprot, oprot) }
    2.times { expect(call.call).to eq([true, Thrift::MessageTypes::REPLY, 7]) }
    processor.class.send(:remove_method, "process_#{name}")
    expect(call.call).to eq(refused)
  end
end
