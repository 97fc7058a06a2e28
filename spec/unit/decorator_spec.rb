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

  # rpc/decorated.rs: MultiplexedProtocol#write_message_begin native, and the RPC code's write_message_end,
  # read_message_end and trans made on the protocol inside. Bytes, exceptions and message encodings against the pure
  # library and the C accelerator; then with write_message_begin prepended on the class, and on ProtocolDecorator.
  it "writes message headers through a MultiplexedProtocol as the library does" do
    code = <<~RUBY
      # frozen_string_literal: true
      BINARY = defined?(Thrift::BinaryProtocolAccelerated) ? Thrift::BinaryProtocolAccelerated : Thrift::BinaryProtocol
      def run(name, type, service = "Svc", protocol: BINARY, seqid: 7, strict: true)
        t = Thrift::MemoryBufferTransport.new
        bare = protocol == BINARY ? protocol.new(t, false, strict) : protocol.new(t)
        prot = Thrift::MultiplexedProtocol.new(bare, service)
        prot.write_message_begin(name, type, seqid)
        prot.write_message_end
        [t.read(t.available), prot.trans.equal?(t)]
      rescue StandardError => e
        [e.class.name, e.message, e.message.encoding.name]
      end
      def all
        cases = [["ping", Thrift::MessageTypes::CALL], ["ping", Thrift::MessageTypes::ONEWAY],
                 ["ping", Thrift::MessageTypes::REPLY], ["ping", Thrift::MessageTypes::EXCEPTION],
                 ["ping", 1.0], ["ping", nil], [:sym, 1], ["caf\\u00e9", 1], ["\\xff".b, 1], [nil, 1], [nil, 2],
                 ["p", 1, :sym_service], ["p", 1, "\\xfe".b], ["p", 1, "caf\\u00e9"], ["\\xff".b, 1, "caf\\u00e9"],
                 ["\\xff", 1, "\\xfe"], ["p", 1, "Svc".encode("US-ASCII")], ["p" * 400, 1], ["p", 1, "S" * 300]]
        cases.flat_map do |name, type, service = "Svc"|
          [run(name, type, service), run(name, type, service, protocol: Thrift::CompactProtocol)]
        end + [2**31 - 1, 2**31, -2**31, -2**31 - 1, 2**62, 2**64, "7"].flat_map do |seqid|
          [run("ping", 1, seqid: seqid), run("ping", 4, seqid: seqid, strict: false)]
        end + [2**31 - 1, 2**32 - 1, "7"].map { |seqid| run("ping", 1, seqid: seqid, protocol: Thrift::CompactProtocol) }
      end
      before = all
      t = Thrift::MemoryBufferTransport.new
      bare = BINARY.new(t)
      prot = Thrift::MultiplexedProtocol.new(bare, "Svc")
      count = lambda do |&call|
        call.call
        n = GC.stat(:total_allocated_objects)
        call.call
        GC.stat(:total_allocated_objects) - n
      end
      count.call {} # GC.stat's first call allocates
      # Beyond what the bare protocol allocates for the same header.
      objects = count.call { prot.write_message_begin(+"ping", 1, 1); prot.write_message_end; prot.trans } -
                count.call { bare.write_message_begin(+"Svc:ping", 1, 1); bare.write_message_end; bare.trans }
      Thrift::MultiplexedProtocol.prepend(Module.new { def write_message_begin(n, t, s) = super(n.to_s.upcase, t, s) })
      prepended = all
      Thrift::ProtocolDecorator.send(:define_method, :write_message_end) { @protocol.write_i32(1) }
      $stdout.write Marshal.dump([before, objects, prepended, all])
    RUBY
    runs = %w[pure c ours].to_h { |a| [a, Marshal.load(ChildRuby.eval(code, accelerator: a, binmode: true))] }
    [0, 2, 3].each do |i|
      expect(runs["ours"][i]).to eq(runs["c"][i])
      expect(runs["ours"][i].map { |r| r.last if r.size == 3 }).to eq(runs["c"][i].map { |r| r.last if r.size == 3 })
    end
    # Pure Ruby's protocols raise other messages for bad arguments; the bytes are the same.
    runs["ours"][0].zip(runs["pure"][0]).each { |o, pure| expect(o).to eq(pure) if o.size == 2 && pure.size == 2 }
    expect(runs["ours"][0].count { |r| r.size == 3 }).to be >= 3 # the nil type, the nil name, the encodings' clash
    # The library's joined name is a String; ours writes the two names' bytes without it.
    expect([runs["c"][1], runs["ours"][1]]).to eq([1, 0])
    expect(runs["ours"][2]).not_to eq(runs["ours"][0])
    expect(runs["ours"][3]).not_to eq(runs["ours"][2])
  end
end
