# frozen_string_literal: true

# The native Thrift::MultiplexedProcessor#process in process: what routing a call allocates. Its answers, errors and
# the header each service sees against the library's: spec/integration/multiplexed_processor_spec.rb.
RSpec.describe "Thrift::MultiplexedProcessor" do
  # A service that reads the call's header through the StoredMessageProtocol it is handed (the calls have no body,
  # so that it allocates nothing) and answers nothing.
  service = Class.new do
    attr_reader :seen

    def process(iprot, _oprot)
      @seen = iprot.read_message_begin
      iprot.read_message_end
      true
    end
  end

  [Thrift::BinaryProtocolAccelerated, Thrift::CompactProtocol].each do |protocol|
    it "routes a call over #{protocol.name.split('::').last} allocating the method name, the " \
       "StoredMessageProtocol and its header" do
      request = Thrift::MemoryBufferTransport.new
      writer = protocol.new(request)
      3.times do |seqid|
        writer.write_message_begin("Calc:ping", Thrift::MessageTypes::CALL, seqid)
        writer.write_message_end
      end
      calc = service.new
      mux = Thrift::MultiplexedProcessor.new
      mux.register_processor("Calc", calc)
      iprot = protocol.new(request)
      oprot = protocol.new(Thrift::MemoryBufferTransport.new)
      mux.process(iprot, oprot)
      # "ping", the StoredMessageProtocol and its [method, type, seqid]: no header Array or name String, no
      # [CALL, ONEWAY], no split Array, no service name (the Hash's own key is found by its bytes).
      expect(allocations { mux.process(iprot, oprot) }).to eq(3)
      expect(calc.seen).to eq(["ping", Thrift::MessageTypes::CALL, 2])
    end
  end
end
