# frozen_string_literal: true

# What the binary and compact protocol specs share: the protocol under test over a fresh MemoryBufferTransport, the
# bytes written so far, a way to put bytes in for reading, and the check of a ProtocolException's type.
RSpec.shared_context "a protocol over a memory buffer" do
  let(:trans) { Thrift::MemoryBufferTransport.new }
  let(:prot) { described_class.new(trans) }

  def written
    trans.instance_variable_get(:@buf).byteslice(trans.instance_variable_get(:@index)..)
  end

  def feed(bytes)
    trans.write(bytes.b)
  end

  # [class, message] of what the block raises, nil when it raises nothing.
  def error_of
    yield
    nil
  rescue StandardError => e
    [e.class, e.message]
  end

  def protocol_error(type, message)
    raise_error(Thrift::ProtocolException, message) { |e| expect(e.type).to eq(type) }
  end
end

# The read methods that only mark structure answer nil, as the C accelerator's do (pure Ruby's answer "").
RSpec.shared_examples "a protocol whose read ends are nil" do
  it "answers nil from the *_end methods and read_struct_begin" do
    %i[read_message_end read_struct_begin read_struct_end read_field_end read_map_end read_list_end read_set_end].each do |m|
      expect(prot.public_send(m)).to be_nil
    end
  end
end
