# frozen_string_literal: true

require_relative "../../test_support/codec_types"
require_relative "../../test_support/codec_samples"

CodecTypes.load!

# Structs read and written through a MultiplexedProtocol or StoredMessageProtocol take the fast path of the protocol
# inside (struct_codec/decorators.rs): the bare protocol's bytes and allocations, and the decorator's own methods
# once one of them changes. Against the C accelerator: spec/integration/struct_differential_spec.rb.
RSpec.describe "Structs through a protocol decorator" do
  decorators = {
    "MultiplexedProtocol" => ->(prot) { Thrift::MultiplexedProtocol.new(prot, "Svc") },
    "StoredMessageProtocol" => ->(prot) { Thrift::StoredMessageProtocol.new(prot, ["m", 1, 0]) },
  }
  protocols = { "binary" => Thrift::BinaryProtocolAccelerated, "compact" => Thrift::CompactProtocol }

  decorators.each do |decorator_name, wrap|
    protocols.each do |protocol_name, protocol|
      it "writes and reads as the bare #{protocol_name} protocol does, allocating the same, through a #{decorator_name}" do
        obj = CodecSamples.small
        bare = Thrift::MemoryBufferTransport.new
        obj.write(protocol.new(bare))
        bytes = bare.read(bare.available)
        through = Thrift::MemoryBufferTransport.new
        obj.write(wrap.call(protocol.new(through)))
        expect(through.read(through.available)).to eq(bytes)

        # Two copies of the bytes: `allocations` runs the block twice (a warm-up first).
        read_with = lambda do |make|
          prot = make.call(protocol.new(Thrift::MemoryBufferTransport.new(bytes * 2)))
          target = CodecTest::Small.new
          [allocations { target.read(prot) }, target]
        end
        bare_objects, bare_read = read_with.call(->(p) { p })
        objects, read = read_with.call(wrap)
        expect(read).to eq(obj)
        expect(bare_read).to eq(obj)
        # A subclass of the decorator is read through its methods (the dispatch path), which allocates more.
        subclass = Class.new(wrap.call(nil).class)
        slow_objects, = read_with.call(->(p) { decorator_name == "MultiplexedProtocol" ? subclass.new(p, "Svc") : subclass.new(p, ["m", 1, 0]) })
        expect(slow_objects).to be > bare_objects
        # Seen through where the decorator passes every codec call on: on a thrift with Types::UUID, that needs its
        # UUID forwarders (thrift 0.14's decorator has none; the contract spec gives that library Types::UUID).
        forwards = !Thrift::Types.const_defined?(:UUID) || Thrift::ProtocolDecorator.method_defined?(:read_uuid)
        expect(objects).to eq(forwards ? bare_objects : slow_objects)
      end
    end
  end

  it "writes through the decorator's methods once one of them changes (as the C accelerator does)" do
    code = <<~RUBY
      require_relative #{File.expand_path("../../test_support/codec_types", __dir__).inspect}
      CodecTypes.load!
      write = lambda do
        t = Thrift::MemoryBufferTransport.new
        CodecTest::Leaf.new(id: 5).write(Thrift::MultiplexedProtocol.new(Thrift::BinaryProtocolAccelerated.new(t), "S"))
        t.read(t.available)
      end
      before = write.call
      Thrift::ProtocolDecorator.send(:define_method, :write_i32) { |v| @protocol.write_i32(v + 1) }
      $stdout.write Marshal.dump([before, write.call])
    RUBY
    ours = Marshal.load(ChildRuby.eval(code, accelerator: "ours", binmode: true))
    c = Marshal.load(ChildRuby.eval(code, accelerator: "c", binmode: true))
    expect(ours).to eq(c)
    expect(ours[0]).not_to eq(ours[1])
  end
end
