# frozen_string_literal: true

# Thrift::JsonProtocol with thrift_native's read and write methods (ext/thrift_native/src/protocols/json/): the
# bytes, values and state the library's own methods give, natively over a plain MemoryBufferTransport, and the
# library's methods themselves everywhere else. spec/integration/json_methods_spec.rb compares random call sequences
# with the library's methods (over the C accelerator's MemoryBufferTransport).
RSpec.describe Thrift::JsonProtocol do
  let(:trans) { Thrift::MemoryBufferTransport.new }
  let(:prot) { described_class.new(trans) }

  def written
    trans.read(trans.available)
  end

  def reader_of(text)
    described_class.new(Thrift::MemoryBufferTransport.new(text.b))
  end

  def contexts(p)
    ctx = ->(c) { [c.class.name.split("::").last, c.instance_variables.sort.map { |i| c.instance_variable_get(i) }] }
    [ctx.call(p.instance_variable_get(:@context)), p.instance_variable_get(:@contexts).map(&ctx)]
  end

  it "is the Ruby class itself, with thrift_native's read and write methods" do
    names = ThriftNative.const_get(:NATIVE_METHODS)[described_class]
    expect(names).to include(:read_i32, :write_field_begin, :read_message_begin, :write_map_end, :read_binary)
    expect(names).not_to include(:skip, :to_s, :write_json_string, :read_json_integer, :push_context)
    expect(described_class.instance_method(:write_i32).source_location).to be_nil
    expect(ThriftNative.active?).to be(true)
  end

  it "writes a message, a struct and its containers as the library does, leaving its contexts" do
    prot.write_message_begin("name", 12, 32)
    expect(written).to eq('[1,"name",12,32')
    pair = prot.write_struct_begin("S")
    expect(pair).to be(prot.instance_variable_get(:@context))
    prot.write_field_begin("f", Thrift::Types::MAP, 3)
    expect(prot.write_map_begin(Thrift::Types::DOUBLE, Thrift::Types::STRING, 2)).to be_a(Thrift::JSONPairContext)
    [[1.5, "a\"\n\u0001é"], [Float::NAN, ""]].each { |k, v| prot.write_double(k); prot.write_string(v) }
    # (flags sorted by name: @colon, @first)
    expect(contexts(prot)).to eq([["JSONPairContext", [false, false]],
                                  [["JSONContext", []], ["JSONListContext", [false]], ["JSONPairContext", [false, false]],
                                   ["JSONPairContext", [false, false]], ["JSONListContext", [false]]]])
    [prot.write_map_end, prot.write_field_end, prot.write_field_stop, prot.write_struct_end, prot.write_message_end]
      .each { |r| expect(r).to be_nil }
    expect(written).to eq(',{"3":{"map":["dbl","str",2,{"1.5":"a\"\n\u0001é","NaN":""}]}}]'.b
      .sub("\n", "\\n").sub("\u0001", "\\u0001"))
    expect(contexts(prot)).to eq([["JSONContext", []], []])
  end

  it "writes scalars as the library does: truthiness, Integer#to_s, Float#to_s, base64, quoted keys" do
    prot.write_list_begin(Thrift::Types::BOOL, 3)
    [true, nil, 0].each { |b| prot.write_bool(b) }
    prot.write_list_end
    prot.write_binary("this is a base64 string")
    prot.write_i64(-2**62)
    prot.write_double(1e20)
    expect(written).to eq('["tf",3,1,0,1]"dGhpcyBpcyBhIGJhc2U2NCBzdHJpbmc="-46116860184273879041.0e+20')
  end

  it "reads a message, a struct and its containers as the library does, the held byte included" do
    r = reader_of('[1,"name",12,32,{"3":{"map":["dbl","str",2,{"1.5":"é","NaN":"x"}]},"4":{"i32":7}}]')
    expect(r.read_message_begin).to eq(["name", 12, 32])
    expect(r.read_struct_begin).to be_nil
    expect(r.read_field_begin).to eq([nil, Thrift::Types::MAP, 3])
    expect(r.read_map_begin).to eq([Thrift::Types::DOUBLE, Thrift::Types::STRING, 2])
    # Raw non-ASCII text: BINARY before thrift master, UTF-8 in master.
    text = ThriftNative::THRIFT_FEATURES[:json_utf8_strings] ? "é" : "é".b
    expect([r.read_double, r.read_string]).to eq([1.5, text])
    expect(r.read_double.nan?).to be(true)
    expect(r.read_string).to eq("x")
    expect([r.read_map_end, r.read_field_end, r.read_field_begin, r.read_i32]).to eq([nil, nil, [nil, 8, 4], 7])
    reader = r.instance_variable_get(:@reader)
    expect([reader.instance_variable_get(:@hasData), reader.instance_variable_get(:@data)]).to eq([true, "}"])
    expect([r.read_field_end, r.read_field_begin]).to eq([nil, [nil, Thrift::Types::STOP, nil]])
    expect([r.read_struct_end, r.read_message_end]).to eq([nil, nil])
    expect(contexts(r)).to eq([["JSONContext", []], []])
    expect(r.trans.available).to eq(0)
  end

  it "leaves what it does not read the common way to the library's method, from the same state" do
    r = reader_of('["i32",3,017,1e3,5]')
    r.read_list_begin
    expect(r.read_i32).to eq(15) # octal, as Integer() reads it
    expect { r.read_i32 }.to raise_error(Thrift::ProtocolException, 'Expected numeric value; got "1e3"')
    reader = r.instance_variable_get(:@reader)
    expect(reader.instance_variable_get(:@data)).to eq(",")
    expect(r.read_i32).to eq(5)
    expect { reader_of("[2,").read_message_begin }
      .to raise_error(an_instance_of(Thrift::ProtocolException).and(having_attributes(message: "Message contained bad version.")))
  end

  it "writes what it does not write the common way with the library's method" do
    prot.write_list_begin(Thrift::Types::I64, 2)
    prot.write_i64(2**70)
    prot.write_i64("12")
    expect(written).to eq('["i64",2,1180591620717411303424,12')
    # An unknown type: NotImplementedError before thrift master, ProtocolException in master, after the '{'.
    expect { prot.write_field_begin("f", 99, 1) }
      .to raise_error { |e| expect([NotImplementedError, Thrift::ProtocolException]).to include(e.class) }
  end

  it "calls the library's methods for an instance whose helpers are mocked, and for a subclass" do
    expect(prot).to receive(:write_json_integer).with(5).and_call_original
    prot.write_i32(5)
    expect(written).to eq("5")
    sub = Class.new(described_class) { define_method(:write_json_integer) { |n| super(n * 2) } }.new(trans)
    sub.write_i32(21)
    expect(written).to eq("42")
  end

  it "allocates nothing for an Integer, a Float or a bool written; a read keeps only the value and the held byte" do
    prot.write_list_begin(Thrift::Types::I32, 3)
    expect(allocations_per(50) { prot.write_i32(123_456) }).to eq(0)
    expect(allocations_per(50) { prot.write_double(2.5) }).to eq(0)
    expect(allocations_per(50) { prot.write_bool(true) }).to eq(0)
    r = reader_of(%(["i32",99,#{(["123456"] * 120).join(",")}]))
    r.read_list_begin
    # The reader keeps the byte after each bare number as a 1-byte String (its @data), as the library's does.
    expect(allocations_per(50) { r.read_i32 }).to eq(50)
    r = reader_of(%(["str",99,#{(['"abc"'] * 120).join(",")}]))
    r.read_list_begin
    expect(allocations_per(50) { r.read_string }).to eq(50)
  end
end
