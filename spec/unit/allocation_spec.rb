# frozen_string_literal: true

# Exact object counts per call (GC.stat(:total_allocated_objects), measured after a warm-up run).
[Thrift::BinaryProtocolAccelerated, Thrift::CompactProtocol].each do |protocol_class|
  RSpec.describe "Allocations of #{protocol_class} on a plain MemoryBufferTransport" do
    let(:trans) { Thrift::MemoryBufferTransport.new }
    let(:prot) { protocol_class.new(trans) }
    # Few enough that the buffer stays under GARBAGE_BUFFER_SIZE: its compaction makes a (shared) String.
    let(:calls) { 50 }

    def fill(writer, value)
      trans.reset_buffer
      (2 * calls + 1).times { prot.public_send(writer, value) }
    end

    {
      read_byte: [:write_byte, -7], read_bool: [:write_bool, true], read_i16: [:write_i16, -300],
      read_i32: [:write_i32, 2**31 - 1], read_i64: [:write_i64, 2**62 - 1], read_double: [:write_double, 1234.5]
    }.each do |reader, (writer, value)|
      it "#{reader} allocates nothing" do
        fill(writer, value)
        p = prot
        expect(allocations_per(calls) { p.public_send(reader) }).to eq(0)
        expect(p.public_send(reader)).to eq(value)
      end
    end

    it "read_double allocates nothing for a value in the flonum range" do
      fill(:write_double, 1.0e-70)
      p = prot
      expect(allocations_per(calls) { p.read_double }).to eq(0)
    end

    it "read_i64 allocates only the Bignum for a value beyond the Fixnum range" do
      fill(:write_i64, -(2**63))
      p = prot
      expect(allocations_per(calls) { p.read_i64 }).to eq(calls)
    end

    {
      read_uuid: [:write_uuid, "00112233-4455-6677-8899-aabbccddeeff"],
      read_string: [:write_string, "longer than 23 bytes: not embedded"],
      read_binary: [:write_binary, "tiny".b]
    }.each do |reader, (writer, value)|
      it "#{reader} allocates exactly its result" do
        fill(writer, value)
        p = prot
        expect(allocations_per(calls) { p.public_send(reader) }).to eq(calls)
      end
    end

    {
      write_byte: 1, write_bool: false, write_i16: 2, write_i32: 3, write_i64: 2**40, write_double: 0.5,
      write_string: "héllo", write_binary: "bin".b, write_uuid: "00112233-4455-6677-8899-aabbccddeeff",
      write_field_stop: nil
    }.each do |writer, value|
      it "#{writer} appends without a temporary String" do
        trans.write("x" * 8192) # capacity, so that buffer growth is not counted
        trans.reset_buffer
        p = prot
        count = if writer == :write_field_stop
                  allocations_per(calls) { p.write_field_stop }
                else
                  allocations_per(calls) { p.public_send(writer, value) }
                end
        expect(count).to eq(0)
        expect(trans.available).to be > 0
      end
    end

    it "header writes allocate nothing" do
      trans.write("x" * 8192)
      trans.reset_buffer
      p = prot
      expect(allocations_per(calls) do
        p.write_struct_begin("S")
        p.write_field_begin("f", 8, 1)
        p.write_map_begin(11, 8, 3)
        p.write_list_begin(8, 3)
        p.write_set_begin(8, 300)
        p.write_struct_end
      end).to eq(0)
    end

    it "read_field_begin allocates only the Array it returns, and struct/container reads only theirs" do
      trans.reset_buffer
      p = prot
      (2 * calls + 1).times do
        p.write_field_begin("f", 8, 1)
        p.write_list_begin(8, 3)
        p.write_field_stop
      end
      expect(allocations_per(calls) do
        p.read_struct_begin
        p.read_field_begin
        p.read_list_begin
        p.read_field_begin
        p.read_struct_end
      end).to eq(3 * calls)
    end
  end
end

RSpec.describe "Allocations of Thrift::CompactProtocol's bool fields" do
  let(:trans) { Thrift::MemoryBufferTransport.new }
  let(:prot) { Thrift::CompactProtocol.new(trans) }
  let(:calls) { 50 }

  it "write_field_begin of a bool field allocates only the [type, id] Array that the C accelerator allocates" do
    trans.write("x" * 8192)
    trans.reset_buffer
    p = prot
    expect(allocations_per(calls) do
      p.write_field_begin("b", Thrift::Types::BOOL, 1)
      p.write_bool(true)
    end).to eq(calls)
  end

  it "reading a bool field allocates only read_field_begin's Array" do
    p = prot
    (2 * calls + 1).times do
      p.write_field_begin("b", Thrift::Types::BOOL, 1)
      p.write_bool(false)
    end
    r = Thrift::CompactProtocol.new(trans)
    expect(allocations_per(calls) do
      r.read_field_begin
      r.read_bool
    end).to eq(calls)
  end
end
