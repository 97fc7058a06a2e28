# frozen_string_literal: true

require_relative "../../test_support/codec_types"

CodecTypes.load!

# The hot paths read and write their ivars (a memory buffer's @buf and @index, a protocol's @trans) in the object
# directly, by a slot learned per class (Ruby 3.1) or per object shape (3.2 on), verified against libruby
# (ext/thrift_native/src/ruby/ivars.rs). Objects of other shapes (extra ivars in any order, an object_id, too many shape
# variations of one class) must read and write exactly what rb_ivar_get and rb_ivar_set would.
RSpec.describe "Hot-path ivar access" do
  def read_through(trans, count)
    prot = Thrift::CompactProtocol.new(trans)
    Array.new(count) { prot.read_byte }
  end

  it "reaches ivars directly on the Rubies whose object layout it knows, and is verified on this one" do
    read_through(Thrift::MemoryBufferTransport.new("\x01".b * 64), 32)
    known = { "3.1" => "class_index", "3.2" => "shapes", "3.3" => "shapes", "3.4" => "shapes", "4.0" => "shape_fields" }
    expect(ThriftNative.__send__(:ivar_access)).to eq(known.fetch(RUBY_VERSION[/\A\d+\.\d+/], "rb_ivar_get"))
  end

  # Ruby 3.1 learns a slot from a value read through rb_ivar_get; a value other ivars share (true in a
  # FramedTransport's @read and @write) is placed by the ivar's rank among them (rb_ivar_foreach's index order).
  it "learns the slot of an ivar whose value other ivars share, whatever order the class's ivars were made in" do
    klass = Class.new do
      include Thrift::Struct
      include Thrift::Struct_Union
      const_set(:FIELDS, { 1 => { type: Thrift::Types::I32, name: "a" }, 2 => { type: Thrift::Types::I32, name: "b" },
                           3 => { type: Thrift::Types::I32, name: "c" } }.freeze)
      def struct_fields = self.class::FIELDS
      def validate; end
      Thrift::Struct.generate_accessors(self)
    end
    expected = ->(a, b, c) { [[8, 1, a], [8, 2, b], [8, 3, c]].select(&:last).map { |t, id, v| [t, 0, id, v].pack("CCCl>") }.join + "\0" }
    write = lambda do |obj|
      trans = Thrift::MemoryBufferTransport.new
      obj.write(Thrift::BinaryProtocolAccelerated.new(trans))
      trans.read(trans.available)
    end
    first = klass.allocate # the class's ivars made in the order c, b, a, all holding 5
    %i[@c @b @a].each { |ivar| first.instance_variable_set(ivar, 5) }
    expect(write.call(first)).to eq(expected.call(5, 5, 5))
    [[1, 2, 3], [7, 7, 9], [4, nil, nil], [6, 6, 6], [1, 2, 3]].each do |a, b, c|
      obj = klass.new(a: a, b: b, c: c)
      expect(write.call(obj)).to eq(expected.call(a, b, c)), [a, b, c].inspect
    end
  end

  it "reads and writes the right ivars for memory buffers of many shapes, taken in turn" do
    bytes = (0..127).map(&:chr).join.b
    transports = Array.new(24) do |i|
      trans = Thrift::MemoryBufferTransport.new(bytes.dup)
      # Extra ivars before and after the library's own, in orders that make new shapes; with enough of them
      # (Ruby 3.3 on: 8 variations of a class), the class's later instances are "too complex".
      (i % 4).times { |k| trans.instance_variable_set(:"@pad#{(i * 7) + k}", k) }
      trans.object_id if i.odd? # Ruby 4.0: an object_id is one of the object's fields
      trans.remove_instance_variable(:@pad0) if i.zero? && trans.instance_variable_defined?(:@pad0)
      trans
    end
    positions = Array.new(transports.size, 0)
    6.times do |round|
      transports.each_with_index do |trans, i|
        n = 1 + ((round + i) % 4)
        expect(read_through(trans, n)).to eq(bytes.bytes[positions[i], n].map { |b| b > 127 ? b - 256 : b })
        positions[i] += n
        expect(trans.instance_variable_get(:@index)).to eq(positions[i])
      end
    end
    expect(transports.map(&:available)).to eq(positions.map { |p| bytes.bytesize - p })
  end

  # From Ruby 3.2 on a slot is learned by the ivar's name, so also while it holds nil or a value another ivar holds:
  # CompactProtocol#read_bool's @bool_value is nil but between a bool field's header and its value.
  it "reads an ivar learned while it held nil, or the same value as another, once Ruby code sets it" do
    trans = Thrift::MemoryBufferTransport.new("\x01".b * 40)
    prot = Thrift::CompactProtocol.new(trans)
    prot.instance_variable_set(:@pad, nil)
    expect(Array.new(20) { prot.read_bool }).to eq([true] * 20)
    prot.instance_variable_set(:@bool_value, false)
    expect(prot.read_bool).to be(false) # the pending value, no byte read
    expect(trans.available).to eq(20)
    expect(prot.instance_variable_get(:@bool_value)).to be_nil
    prot.instance_variable_set(:@bool_value, true)
    expect(prot.read_bool).to be(true)
    expect(trans.available).to eq(20)
  end

  it "follows an ivar replaced from Ruby between reads, and an object whose ivars were removed and set again" do
    trans = Thrift::MemoryBufferTransport.new("abcdef".b)
    expect(read_through(trans, 2)).to eq([97, 98])
    trans.instance_variable_set(:@index, 4)
    expect(read_through(trans, 1)).to eq([101])
    trans.instance_variable_set(:@buf, "xyz".b)
    trans.instance_variable_set(:@index, 0)
    expect(read_through(trans, 3)).to eq([120, 121, 122])
    trans.remove_instance_variable(:@index)
    trans.instance_variable_set(:@index, 1)
    expect(read_through(trans, 1)).to eq([121])
    expect(trans.instance_variable_get(:@index)).to eq(2)
  end

  # A call site whose receivers are of any class (Thrift::Client's @oprot, @iprot, @seqid, @pending_seqids; a
  # socket's @handle) keeps one slot, aimed again when the class changes; on 3.1 the class it is aimed at is kept
  # alive, so that a class made at a freed one's address cannot inherit its index.
  it "reads and writes a client's ivars for clients of several classes in turn, replaced ones and dropped classes" do
    plain = Class.new { include Thrift::Client }
    # Other ivars first: the client's own come at other indices.
    padded = Class.new do
      include Thrift::Client

      def initialize(*protocols)
        @before = nil
        @other = "x"
        super
      end
    end
    # strict binary: version, name length, "ping", then the sequence id
    seqid_sent = ->(trans) { trans.read(trans.available).byteslice(12, 4).unpack1("l>") }
    # thrift 0.24 and master count sequence ids (`next_seqid!`); before, every call sent @seqid as it was.
    counted = Thrift::Client.private_method_defined?(:next_seqid!)
    clients = [plain, padded, plain, padded].map do |klass|
      trans = Thrift::MemoryBufferTransport.new
      [klass.new(Thrift::BinaryProtocolAccelerated.new(trans)), trans]
    end
    3.times do |round|
      clients.each_with_index do |(client, trans), i|
        client.instance_variable_set(:@seqid, 100 * i + round)
        client.send_message("ping", CodecTest::Leaf, id: i)
        expect(seqid_sent.call(trans)).to eq(100 * i + round)
        expect(client.instance_variable_get(:@seqid)).to eq(100 * i + round + (counted ? 1 : 0))
      end
    end
    # A protocol replaced between calls: the next call writes to the new one.
    client, old_trans = clients[1]
    new_trans = Thrift::MemoryBufferTransport.new
    client.instance_variable_set(:@oprot, Thrift::BinaryProtocolAccelerated.new(new_trans))
    client.instance_variable_set(:@seqid, 5)
    client.send_message("ping", CodecTest::Leaf, id: 1)
    expect(old_trans.available).to eq(0)
    expect(seqid_sent.call(new_trans)).to eq(5)
    # Classes made and dropped between calls, then collected (and the heap compacted where Ruby can).
    20.times do |i|
      trans = Thrift::MemoryBufferTransport.new
      klass = Class.new(i.even? ? plain : padded)
      klass.new(Thrift::BinaryProtocolAccelerated.new(trans)).send_message("ping", CodecTest::Leaf, id: i)
      expect(seqid_sent.call(trans)).to eq(0)
    end
    GC.start
    GC.compact if GC.respond_to?(:compact)
    clients.each_with_index do |(client, trans), i|
      client.instance_variable_set(:@seqid, i)
      client.send_message("ping", CodecTest::Leaf, id: i)
      expect(seqid_sent.call(i == 1 ? new_trans : trans)).to eq(i)
    end
  end
end
