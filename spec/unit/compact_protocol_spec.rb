# frozen_string_literal: true

require_relative "../support/helpers/protocol_context"

# Thrift::CompactProtocol with thrift_native's methods. Expectations come from master's C accelerator
# (apache/thrift lib/rb/ext/compact_protocol.c) and from upstream's compact_protocol_spec; where the C accelerators
# before master behave differently, ours follows the loaded thrift's (SpecSupport.newer?), and examples state both
# sides (spec/integration/differential_spec.rb compares with the loaded thrift's C accelerator).
RSpec.describe Thrift::CompactProtocol do
  include_context "a protocol over a memory buffer"
  it_behaves_like "a protocol whose read ends are nil"

  def reader_of(bytes)
    described_class.new(Thrift::MemoryBufferTransport.new(bytes.b))
  end

  it "is the Ruby class itself, with thrift_native's methods" do
    expect(prot.native?).to be(true)
    expect(ThriftNative.active?).to be(true)
    expect(ThriftNative.const_get(:NATIVE_METHODS)[described_class]).to include(:read_i32, :write_field_begin, :read_uuid)
    expect(ThriftNative.const_get(:NATIVE_METHODS)[described_class]).not_to include(:skip, :to_s)
    expect(prot.to_s).to start_with("compact(")
  end

  describe "writes (exact bytes)" do
    {
      [:write_byte, -1] => "\xFF", [:write_byte, 127] => "\x7F",
      [:write_bool, true] => "\x01", [:write_bool, false] => "\x02", [:write_bool, nil] => "\x02",
      [:write_i16, 0] => "\x00", [:write_i16, -1] => "\x01", [:write_i16, 1] => "\x02",
      [:write_i16, -32_768] => "\xFF\xFF\x03", [:write_i16, 32_767] => "\xFE\xFF\x03",
      [:write_i32, 300] => "\xD8\x04", [:write_i32, -(2**31)] => "\xFF\xFF\xFF\xFF\x0F",
      [:write_i32, 2**31 - 1] => "\xFE\xFF\xFF\xFF\x0F",
      [:write_i64, -(2**63)] => "#{"\xFF" * 9}\x01", [:write_i64, 2**63 - 1] => "\xFE#{"\xFF" * 8}\x01",
      [:write_i64, 64] => "\x80\x01",
      [:write_double, 1.0] => "\x00\x00\x00\x00\x00\x00\xF0\x3F", [:write_double, -0.0] => "#{"\x00" * 7}\x80",
      [:write_double, 2] => "#{"\x00" * 7}\x40", [:write_double, "1.5"] => "\x00\x00\x00\x00\x00\x00\xF8\x3F",
      [:write_string, "héllo"] => "\x06h\xC3\xA9llo", [:write_string, ""] => "\x00",
      [:write_binary, "\x00\xFF".b] => "\x02\x00\xFF", [:write_binary, "x" * 128] => "\x80\x01#{"x" * 128}",
      [:write_uuid, "00112233-4455-6677-8899-AABBCCDDEEFF"] => "\x00\x11\x22\x33\x44\x55\x66\x77\x88\x99\xAA\xBB\xCC\xDD\xEE\xFF",
      [:write_field_stop] => "\x00",
      [:write_map_begin, 11, 8, 2] => "\x02\x85", [:write_map_begin, nil, nil, 0] => "\x00",
      [:write_list_begin, 12, 1] => "\x1C", [:write_set_begin, 6, 0] => "\x04", [:write_list_begin, 8, 14] => "\xE5",
      [:write_list_begin, 8, 15] => "\xF5\x0F", [:write_set_begin, 11, 300] => "\xF8\xAC\x02",
      [:write_list_begin, 2, 2**31 - 1] => "\xF1\xFF\xFF\xFF\xFF\x07",
      [:write_message_begin, "ping", 1, 7] => "\x82\x21\x07\x04ping",
      [:write_message_begin, "", 140, 0] => "\x82\x81\x00\x00",
      [:write_message_begin, "x", 4, -1] => "\x82\x81\xFF\xFF\xFF\xFF\x0F\x01x"
    }.each do |(method, *args), bytes|
      it "#{method}(#{args.map(&:inspect).join(", ")}) writes #{bytes.b.unpack1("H*")}" do
        expect(prot.public_send(method, *args)).to be_nil
        expect(written).to eq(bytes.b)
      end
    end

    it "writes a bool by truthiness (thrift master), or as true only for `true` (the C accelerator before)" do
      [0, :x, ""].each { |b| prot.write_bool(b) }
      expect(written).to eq(SpecSupport.newer?(:compact_header_codes) ? "\x01\x01\x01".b : "\x02\x02\x02".b)
    end

    it "writes UUID (16) container types where the loaded thrift has UUID, and refuses them as an unknown type before" do
      if SpecSupport.newer?(:uuid_type_defined)
        prot.write_map_begin(16, 2, 300)
        expect(written).to eq("\xAC\x02\xD1".b)
      else
        expect(error_of { prot.write_map_begin(16, 2, 300) }).to eq([StandardError, "don't know what type: 16"])
        expect(written).to eq("\xAC\x02".b)
      end
    end

    it "writes field ids as deltas from the last id of the current struct, or as zigzag varints" do
      prot.write_struct_begin("S")
      prot.write_field_begin("a", Thrift::Types::I32, 1)
      prot.write_field_begin("b", Thrift::Types::STRING, 3)
      prot.write_field_begin("c", Thrift::Types::I64, 18) # delta 15
      prot.write_field_begin("d", Thrift::Types::I64, 34) # delta 16
      prot.write_field_begin("e", Thrift::Types::BYTE, 29) # negative delta
      prot.write_field_begin("f", Thrift::Types::DOUBLE, 29) # zero delta
      prot.write_field_begin("g", Thrift::Types::STRUCT, -5)
      expect(written).to eq("\x15\x28\xF6\x06\x44\x03\x3A\x07\x3A\x0C\x09".b)
      expect(prot.instance_variable_get(:@last_field)).to eq([0, -5])
    end

    it "keeps a stack of last ids across nested structs" do
      prot.write_struct_begin("Outer")
      prot.write_field_begin("inner", Thrift::Types::STRUCT, 5)
      prot.write_struct_begin("Inner")
      expect(prot.instance_variable_get(:@last_field)).to eq([0, 5, 0])
      prot.write_field_begin("x", Thrift::Types::I32, 1)
      prot.write_field_stop
      prot.write_struct_end
      prot.write_field_begin("y", Thrift::Types::I32, 6)
      prot.write_field_stop
      prot.write_struct_end
      expect(written).to eq("\x5C\x15\x00\x15\x00".b)
      expect(prot.instance_variable_get(:@last_field)).to eq([0])
    end

    it "packs a bool field's value into its header, through @boolean_field" do
      prot.write_struct_begin("S")
      prot.write_field_begin("t", Thrift::Types::BOOL, 1)
      expect(prot.instance_variable_get(:@boolean_field)).to eq([Thrift::Types::BOOL, 1])
      expect(written).to eq("")
      prot.write_bool(true)
      expect(prot.instance_variable_get(:@boolean_field)).to be_nil
      prot.write_field_begin("f", Thrift::Types::BOOL, 2)
      prot.write_bool(false)
      prot.write_field_begin("far", Thrift::Types::BOOL, 100)
      prot.write_bool(:truthy)
      prot.write_bool(true) # not in a field: a plain byte
      truthy = SpecSupport.newer?(:compact_header_codes) ? "\x01" : "\x02"
      expect(written).to eq("\x11\x12#{truthy}\xC8\x01\x01".b)
    end

    it "are no-ops for the *_end methods (write_struct_end pops the stack)" do
      %i[write_message_end write_field_end write_map_end write_list_end write_set_end].each do |m|
        expect(prot.public_send(m)).to be_nil
      end
      expect(prot.write_struct_begin("S")).to be_nil
      expect(prot.write_struct_end).to be_nil
      expect(prot.instance_variable_get(:@last_field)).to eq([0])
      expect(written).to eq("")
    end

    it "re-tags a non-binary String given to write_binary as BINARY, in place, but not one given to write_string" do
      s = +"abc"
      prot.write_binary(s)
      expect(s.encoding).to eq(Encoding::BINARY)
      t = +"abc"
      prot.write_string(t)
      expect(t.encoding).to eq(Encoding::UTF_8)
      prot.write_string("\xE9".dup.force_encoding("ISO-8859-1"))
      expect(written).to eq("\x03abc\x03abc\x02\xC3\xA9".b)
    end
  end

  describe "write errors" do
    it "lets Thrift::Bytes raise for nil strings and binaries" do
      expect { prot.write_string(nil) }.to raise_error(NoMethodError)
      expect { prot.write_binary(nil) }.to raise_error(NoMethodError)
      expect { prot.write_string(:sym) }.to raise_error(NoMethodError)
    end

    context "with thrift master's checks", if: SpecSupport.newer?(:checked_compact_writes) do
      it "rejects nil with StandardError, other types with TypeError, out-of-range values with RangeError, before writing" do
        %i[write_byte write_i16 write_i32 write_i64 write_double].each do |m|
          expect(error_of { prot.public_send(m, nil) }).to eq([StandardError, "nil argument not allowed!"])
        end
        { write_byte: [128, -129], write_i16: [2**15, -(2**15) - 1], write_i32: [2**31, -(2**31) - 1] }.each do |m, values|
          values.each { |v| expect(error_of { prot.public_send(m, v) }).to eq([RangeError, "integer out of bounds"]) }
        end
        expect(error_of { prot.write_i64(2**64) }).to eq([RangeError, RubyFacts.long_long_range_message])
        %i[write_byte write_i16 write_i32 write_i64].each do |m|
          expect(error_of { prot.public_send(m, 1.5) }).to eq([TypeError, "integer argument expected"])
        end
        expect(error_of { prot.write_double("abc") }).to eq([ArgumentError, 'invalid value for Float(): "abc"'])
        expect(written).to eq("")
      end

      it "checks field ids before changing the stack or writing" do
        prot.write_struct_begin("S")
        { nil => StandardError, 2**15 => RangeError, -(2**15) - 1 => RangeError, 1.5 => TypeError }.each do |id, error|
          expect { prot.write_field_begin("f", Thrift::Types::I32, id) }.to raise_error(error)
        end
        expect { prot.write_field_begin("f", nil, 1) }.to raise_error(TypeError, "no implicit conversion from nil to integer")
        expect(prot.instance_variable_get(:@last_field)).to eq([0, 0])
        expect(written).to eq("")
      end

      it "raises Thrift::ProtocolException::INVALID_DATA for STOP and unknown field types, before writing (pure Ruby writes STOP as 0x10)" do
        prot.write_struct_begin("S")
        [0, 1, 99, Thrift::Types::VOID].each do |type|
          expect { prot.write_field_begin("f", type, 1) }.to protocol_error(Thrift::ProtocolException::INVALID_DATA, "Unknown compact type: #{type}")
        end
        expect { prot.write_list_begin(99, 1) }.to protocol_error(Thrift::ProtocolException::INVALID_DATA, "Unknown compact type: 99")
        expect { prot.write_set_begin(0, 20) }.to protocol_error(Thrift::ProtocolException::INVALID_DATA, "Unknown compact type: 0")
        expect(prot.instance_variable_get(:@last_field)).to eq([0, 0])
        expect(written).to eq("")
      end

      it "has written a map's size when one of its types is unknown, as pure Ruby and the C accelerator" do
        expect { prot.write_map_begin(8, 99, 3) }.to protocol_error(Thrift::ProtocolException::INVALID_DATA, "Unknown compact type: 99")
        expect(written).to eq("\x03".b)
      end

      it "checks container sizes before writing" do
        [[:write_map_begin, 11, 8], [:write_list_begin, 6], [:write_set_begin, 6]].each do |method, *types|
          { nil => [StandardError, "nil argument not allowed!"], -1 => [RangeError, "integer out of bounds"],
            2**31 => [RangeError, "integer out of bounds"], 1.5 => [TypeError, "integer argument expected"] }.each do |size, err|
            expect(error_of { prot.public_send(method, *types, size) }).to eq(err)
          end
        end
        expect(written).to eq("")
      end

      it "checks the sequence id and the message type before writing the envelope" do
        expect(error_of { prot.write_message_begin("m", 1, nil) }).to eq([StandardError, "nil argument not allowed!"])
        expect(error_of { prot.write_message_begin("m", 1, 2**31) }).to eq([RangeError, "integer out of bounds"])
        expect(error_of { prot.write_message_begin("m", 1, 1.5) }).to eq([TypeError, "integer argument expected"])
        expect(error_of { prot.write_message_begin("m", nil, 1) }).to eq([TypeError, "no implicit conversion from nil to integer"])
        expect(written).to eq("")
        expect { prot.write_message_begin(nil, 1, 1) }.to raise_error(NoMethodError)
        expect(written).to eq("\x82\x21\x01".b) # the name is converted after the header is written
      end
    end

    # thrift 0.14 to 0.24's C accelerator, which the loaded thrift calls for (the same outcomes as Debian's 0.14
    # C accelerator: spec/integration/differential_spec.rb).
    context "before thrift master's checks", unless: SpecSupport.newer?(:checked_compact_writes) do
      it "converts with NUM2INT/NUM2LL and writes the low byte or the whole value, refusing nil" do
        %i[write_byte write_i16 write_i32 write_i64 write_double].each do |m|
          expect(error_of { prot.public_send(m, nil) }).to eq([StandardError, "nil argument not allowed!"])
        end
        prot.write_byte(128)
        prot.write_byte(300)
        prot.write_i16(70_000) # the i32 it is
        prot.write_i16(1.5)
        expect(written).to eq("\x80\x2C\xE0\xC5\x08\x02".b)
        expect(error_of { prot.write_i32(2**31) }).to match([RangeError, /\Ainteger 2147483648 too big to convert to .int'\z/])
        expect(error_of { prot.write_i64(2**64) }).to match([RangeError, /\Abignum too big to convert into .long long'\z/])
      end

      it "writes negative sizes as they are: a list's short form, a map's 32-bit varint" do
        prot.write_list_begin(Thrift::Types::I32, -1)
        prot.write_map_begin(Thrift::Types::I32, Thrift::Types::I32, -1)
        expect(written).to eq("\xF5\xFF\xFF\xFF\xFF\x0F\x55".b)
        expect(error_of { prot.write_set_begin(Thrift::Types::I32, nil) }).to eq([TypeError, "no implicit conversion from nil to integer"])
      end

      it "writes a field id beyond 16 bits whole, and looks an unknown type up after popping the last id" do
        prot.write_struct_begin("S")
        prot.write_field_begin("f", Thrift::Types::I32, 40_000)
        expect(prot.instance_variable_get(:@last_field)).to eq([0, 40_000])
        expect(written).to eq("\x05\x80\xF1\x04".b)
        expect(error_of { prot.write_field_begin("f", 99, 1) }).to eq([StandardError, "don't know what type: 99"])
        expect(prot.instance_variable_get(:@last_field)).to eq([0])
        expect(error_of { prot.write_field_begin("f", Thrift::Types::I32, nil) }).to eq([TypeError, "no implicit conversion from nil to integer"])
        expect(error_of { prot.write_list_begin(0, 1) }).to eq([StandardError, "don't know what type: 0"])
        expect(error_of { prot.write_map_begin(8, 99, 3) }).to eq([StandardError, "don't know what type: 99"])
        expect(written).to eq("\x05\x80\xF1\x04\x03".b) # the map's size went out before its types were looked up
      end

      it "converts the message type and the sequence id as the bytes before them are written (0.24: the sequence id first)" do
        expect(error_of { prot.write_message_begin("m", nil, 1) }).to eq([TypeError, "no implicit conversion from nil to integer"])
        expect(written).to eq("\x82".b)
        expect(error_of { prot.write_message_begin("m", 1, nil) }).to eq([TypeError, "no implicit conversion from nil to integer"])
        expect(written).to eq(SpecSupport.newer?(:varint32_limit) ? "\x82".b : "\x82\x82\x21".b)
      end
    end

    it "raises Thrift::ProtocolException::INVALID_DATA for bad UUIDs" do
      expect { prot.write_uuid("00112233-4455-6677-8899-aabbccddeefg") }.to protocol_error(Thrift::ProtocolException::INVALID_DATA, "Invalid UUID format")
      expect { prot.write_uuid("0011223304455-6677-8899-aabbccddeeff") }.to protocol_error(Thrift::ProtocolException::INVALID_DATA, "Invalid UUID format")
      [nil, 12].each { |bad| expect { prot.write_uuid(bad) }.to protocol_error(Thrift::ProtocolException::INVALID_DATA, "UUID must be a string") }
      expect(written).to eq("")
    end
  end

  describe "reads" do
    it "round-trips every type at its boundaries" do
      values = {
        byte: [-128, -1, 0, 127], bool: [true, false], i16: [-32_768, -1, 0, 1, 63, 64, 32_767],
        i32: [-(2**31), -65, -64, -1, 0, 2**31 - 1], i64: [-(2**63), -(2**62) - 1, 2**62, 2**63 - 1, 0],
        double: [0.0, -0.0, 1.5, 1e300, -Float::INFINITY, Float::MAX, 5e-324],
        string: ["", "a", "héllo wörld", "\u{1F600}" * 100], binary: ["".b, "\x00\xFF".b * 1000],
        uuid: ["00000000-0000-0000-0000-000000000000", "ffffffff-ffff-ffff-ffff-ffffffffffff", "01234567-89ab-cdef-0123-456789abcdef"]
      }
      values.each do |type, list|
        list.each { |v| prot.public_send("write_#{type}", v) }
        list.each do |v|
          got = prot.public_send("read_#{type}")
          expect(got).to eql(v), "read_#{type}: #{got.inspect} != #{v.inspect}"
        end
      end
      expect((prot.write_double(Float::NAN); prot.read_double)).to be_nan
      expect(trans.available).to eq(0)
    end

    it "round-trips fields, bool fields, nested structs and containers" do
      prot.write_struct_begin("S")
      prot.write_field_begin("a", Thrift::Types::I32, 1)
      prot.write_i32(-1)
      prot.write_field_begin("b", Thrift::Types::BOOL, 40)
      prot.write_bool(true)
      prot.write_field_begin("c", Thrift::Types::STRUCT, 41)
      prot.write_struct_begin("T")
      prot.write_field_begin("d", Thrift::Types::BOOL, 1)
      prot.write_bool(false)
      prot.write_field_stop
      prot.write_struct_end
      prot.write_field_begin("e", Thrift::Types::MAP, 42)
      prot.write_map_begin(Thrift::Types::STRING, Thrift::Types::LIST, 1)
      prot.write_string("k")
      prot.write_list_begin(Thrift::Types::BOOL, 2)
      prot.write_bool(true)
      prot.write_bool(false)
      prot.write_field_begin("f", Thrift::Types::SET, -3)
      prot.write_set_begin(Thrift::Types::DOUBLE, 20)
      prot.write_field_stop
      prot.write_struct_end

      r = described_class.new(trans)
      expect(r.read_struct_begin).to be_nil
      expect(r.read_field_begin).to eq([nil, Thrift::Types::I32, 1])
      expect(r.read_i32).to eq(-1)
      expect(r.read_field_begin).to eq([nil, Thrift::Types::BOOL, 40])
      expect(r.instance_variable_get(:@bool_value)).to be(true)
      expect(r.read_bool).to be(true)
      expect(r.instance_variable_get(:@bool_value)).to be_nil
      expect(r.read_field_begin).to eq([nil, Thrift::Types::STRUCT, 41])
      r.read_struct_begin
      expect(r.instance_variable_get(:@last_field)).to eq([0, 41, 0])
      expect(r.read_field_begin).to eq([nil, Thrift::Types::BOOL, 1])
      expect(r.read_bool).to be(false)
      expect(r.read_field_begin).to eq([nil, 0, 0])
      expect(r.read_struct_end).to be_nil
      expect(r.read_field_begin).to eq([nil, Thrift::Types::MAP, 42])
      expect(r.read_map_begin).to eq([Thrift::Types::STRING, Thrift::Types::LIST, 1])
      expect(r.read_string).to eq("k")
      expect(r.read_list_begin).to eq([Thrift::Types::BOOL, 2])
      expect([r.read_bool, r.read_bool]).to eq([true, false])
      expect(r.read_field_begin).to eq([nil, Thrift::Types::SET, -3])
      expect(r.read_set_begin).to eq([Thrift::Types::DOUBLE, 20])
      expect(r.read_field_begin).to eq([nil, 0, 0])
      r.read_struct_end
      expect(r.instance_variable_get(:@last_field)).to eq([0])
      expect(trans.available).to eq(0)
    end

    it "skips with the Ruby skip, which calls the native reads" do
      prot.write_struct_begin("S")
      prot.write_field_begin("a", Thrift::Types::LIST, 1)
      prot.write_list_begin(Thrift::Types::STRING, 2)
      prot.write_string("one")
      prot.write_binary("two")
      prot.write_field_begin("b", Thrift::Types::BOOL, 2)
      prot.write_bool(true)
      prot.write_field_stop
      prot.write_struct_end
      prot.write_i32(77)
      r = described_class.new(trans)
      r.skip(Thrift::Types::STRUCT)
      expect(r.read_i32).to eq(77)
    end

    it "returns a fresh [nil, 0, 0] for STOP, leaving the stack alone" do
      feed("\x00\xF0")
      a = prot.read_field_begin
      b = prot.read_field_begin
      expect([a, b]).to eq([[nil, 0, 0], [nil, 0, 0]])
      expect(a).not_to be(b)
      expect(a).not_to be_frozen
      expect(prot.instance_variable_get(:@last_field)).to eq([0])
    end

    it "reads field ids with a zero delta as zigzag varints" do
      feed("\x05\x3C\x16\x03\x01")
      expect(prot.read_field_begin).to eq([nil, Thrift::Types::I32, 30])
      expect(prot.read_field_begin).to eq([nil, Thrift::Types::I64, 31])
      expect(prot.read_field_begin).to eq([nil, Thrift::Types::BYTE, -1])
    end

    it "truncates read_i16 to 16 bits, as the C accelerator (pure Ruby returns 70000)" do
      feed("\xE0\xC5\x08")
      expect(prot.read_i16).to eq(4464)
    end

    it "reads bool as byte == 1 outside a field" do
      feed("\x01\x02\x00\x03")
      expect(4.times.map { prot.read_bool }).to eq([true, false, false, false])
    end

    it "reads signed bytes, empty maps and multi-byte lengths" do
      feed("\x80\x00\x80\x01#{"x" * 128}")
      expect(prot.read_byte).to eq(-128)
      expect(prot.read_map_begin).to eq([0, 0, 0])
      expect(prot.read_binary).to eq("x" * 128)
    end

    it "returns Strings in the C accelerator's encodings, without validating UTF-8" do
      prot.write_string("é")
      prot.write_binary("é")
      prot.write_uuid("01234567-89ab-cdef-0123-456789abcdef")
      feed("\x01\xFF")
      expect(prot.read_string.encoding).to eq(Encoding::UTF_8)
      expect(prot.read_binary.encoding).to eq(Encoding::BINARY)
      expect(prot.read_uuid.encoding).to eq(Encoding::BINARY)
      s = prot.read_string
      expect([s.bytes, s.encoding, s.valid_encoding?]).to eq([[255], Encoding::UTF_8, false])
    end
  end

  describe "read_message_begin" do
    it "reads the envelope" do
      prot.write_message_begin("getName", Thrift::MessageTypes::REPLY, 123)
      expect(prot.read_message_begin).to eq(["getName", 2, 123])
      feed("\x82\xE1\xFF\xFF\xFF\xFF\x0F\x01a")
      expect(prot.read_message_begin).to eq(["a", 7, -1])
    end

    it "rejects a wrong protocol id or version with BAD_VERSION (thrift master), or type -1 and the old swapped message" do
      newer = SpecSupport.newer?(:compact_header_codes)
      { "\x00" => "Expected protocol id -126 but got 0", "\x81" => "Expected protocol id -126 but got -127",
        "\x82\x00" => newer ? "Expected version 1 but got 0" : "Expected version id 0 but got 1",
        "\x82\x22" => newer ? "Expected version 1 but got 2" : "Expected version id 2 but got 1" }.each do |bytes, message|
        expect { reader_of(bytes).read_message_begin }.to protocol_error(newer ? Thrift::ProtocolException::BAD_VERSION : -1, message)
      end
    end

    it "limits the name's length as read_binary does" do
      expect { reader_of("\x82\x21\x00\x80\x80\x80\x80\x08").read_message_begin }
        .to protocol_error(Thrift::ProtocolException::SIZE_LIMIT, "Binary size limit exceeded")
    end

    it "calls trans.reset_message_size first when @reset_message_size is set" do
      prot.instance_variable_set(:@reset_message_size, true)
      prot.write_message_begin("a", 1, 1)
      expect(trans).to receive(:reset_message_size).once
      expect(prot.read_message_begin).to eq(["a", 1, 1])
    end
  end

  describe "bad input" do
    it "reads varint32s as the loaded thrift does: 5 bytes and 32 bits at most on master, 0.24 drops wider bits, before cut varint64s" do
      expect(reader_of("\x80\x80\x80\x80\x0F").read_i32).to eq(2_013_265_920) # unzigzag of 0xF0000000
      expect(reader_of("\xFF\xFF\xFF\xFF\x0F").read_i32).to eq(-(2**31))
      [0x10, 0x7F].each do |last|
        if SpecSupport.newer?(:varint32_overflow_refused)
          expect { reader_of("\x80\x80\x80\x80#{last.chr}").read_i32 }
            .to protocol_error(Thrift::ProtocolException::INVALID_DATA, "Variable-length int overflows uint32.")
        else
          expect(reader_of("\x80\x80\x80\x80#{last.chr}").read_i32).to eq(last == 0x10 ? 0 : 2_013_265_920)
        end
      end
      if SpecSupport.newer?(:varint32_limit)
        %i[read_i16 read_i32 read_binary read_string read_map_begin].each do |m|
          expect { reader_of("\x80\x80\x80\x80\x80\x01").public_send(m) }
            .to protocol_error(Thrift::ProtocolException::INVALID_DATA, "Variable-length int over 5 bytes.")
        end
      else
        # A varint64 cut to 32 bits: 2**35 + 1 reads as 1 (zigzag: -1), sizes as the int32 they are cut to.
        expect(reader_of("\x81\x80\x80\x80\x80\x01").read_i32).to eq(-1)
        expect(reader_of("\x84\x80\x80\x80\x80\x01").read_i16).to eq(2)
        expect(reader_of("\xFF\xFF\xFF\xFF\xFF\x01\x55").read_map_begin).to eq([8, 8, -1])
        # A byte string's length is not cut: beyond INT32_MAX it is refused (ARCHITECTURE.md, "The contract": kept where the old was unsafe).
        expect { reader_of("\x80\x80\x80\x80\x80\x01").read_binary }
          .to protocol_error(Thrift::ProtocolException::SIZE_LIMIT, "Binary size limit exceeded")
        expect { reader_of("#{"\x80" * 10}\x01").read_i32 }
          .to protocol_error(Thrift::ProtocolException::INVALID_DATA, "Variable-length int over 10 bytes.")
      end
    end

    it "rejects varint64s over 10 bytes and drops the 10th byte's bits beyond 64" do
      expect { reader_of("\x80" * 10).read_i64 }.to protocol_error(Thrift::ProtocolException::INVALID_DATA, "Variable-length int over 10 bytes.")
      expect(reader_of("#{"\xFF" * 9}\x7F").read_i64).to eq(-(2**63))
    end

    it "consumes what reading the varint byte by byte consumes" do
      over_five = SpecSupport.newer?(:varint32_limit) ? 1 : 0
      { "\x80\x80\x80\x80\x80\x01" => over_five, "\x80\x80\x80\x80\x10\x01" => 1, "\x96\x01\x01" => 1 }.each do |bytes, left|
        t = Thrift::MemoryBufferTransport.new(bytes.b)
        begin
          described_class.new(t).read_i32
        rescue Thrift::ProtocolException
          nil
        end
        expect(t.available).to eq(left)
      end
      t = Thrift::MemoryBufferTransport.new(("\x80" * 11).b)
      expect { described_class.new(t).read_i64 }.to raise_error(Thrift::ProtocolException)
      expect(t.available).to eq(1)
    end

    it "raises EOFError for truncated data, having consumed a truncated varint" do
      { read_byte: "", read_bool: "", read_i16: "\x80", read_i32: "\xFF\xFF", read_i64: "\x80" * 9, read_double: "\x00" * 7,
        read_uuid: "\x01" * 15, read_binary: "\x05abc", read_string: "\x80", read_field_begin: "\x05\x80",
        read_list_begin: "\xF5\x80", read_map_begin: "\x02", read_message_begin: "\x82\x21\x80" }.each do |m, bytes|
        expect { reader_of(bytes).public_send(m) }.to raise_error(EOFError), "#{m} of #{bytes.inspect}"
      end
      feed("\x80\x80")
      expect { prot.read_i32 }.to raise_error(EOFError, "Not enough bytes remain in memory buffer")
      expect(trans.available).to eq(0)
    end

    it "leaves a short payload unread (thrift 0.24's read_all on), or consumes it (BaseTransport#read_all before)" do
      feed("\x05abc")
      expect { prot.read_string }.to raise_error(EOFError)
      expect(trans.available).to eq(SpecSupport.newer?(:memory_buffer_read_all) ? 3 : 0)
    end

    it "raises INVALID_DATA (thrift master) or StandardError (before) for unknown compact types, after pushing a field's id" do
      unknown = lambda do |type|
        if SpecSupport.newer?(:compact_unknown_type_errors)
          protocol_error(Thrift::ProtocolException::INVALID_DATA, "Unknown compact type: #{type}")
        else
          raise_error(an_instance_of(StandardError).and(having_attributes(message: "don't know what type: #{type}")))
        end
      end
      expect { reader_of("\x1E").read_list_begin }.to unknown.call(14)
      expect { reader_of("\x01\xE8").read_map_begin }.to unknown.call(14)
      expect { reader_of("\x01\x8F").read_map_begin }.to unknown.call(15)
      feed("\x1E")
      expect { prot.read_field_begin }.to unknown.call(14)
      expect(prot.instance_variable_get(:@last_field)).to eq([1])
      # UUID's compact type (13) is unknown to a thrift without UUID.
      expect { reader_of("\x1D").read_list_begin }.to unknown.call(13) unless SpecSupport.newer?(:uuid_type_defined)
    end

    it "limits container sizes to INT32_MAX with SIZE_LIMIT (thrift master), or answers them unsigned (0.24) or as negative int32s (before)" do
      expect(reader_of("\xF5\xFF\xFF\xFF\xFF\x07").read_list_begin).to eq([Thrift::Types::I32, 2**31 - 1])
      { "\x80\x80\x80\x80\x08" => -(2**31), "\xFF\xFF\xFF\xFF\x0F" => -1 }.each do |size, as_int32|
        # thrift 0.24's varint32 is a uint32, answered as it is.
        as_int32 += 2**32 if SpecSupport.newer?(:varint32_limit)
        if SpecSupport.newer?(:container_size_limit)
          expect { reader_of("#{size}\x55").read_map_begin }.to protocol_error(Thrift::ProtocolException::SIZE_LIMIT, "Container size limit exceeded")
          %i[read_list_begin read_set_begin].each do |m|
            expect { reader_of("\xF5#{size}").public_send(m) }.to protocol_error(Thrift::ProtocolException::SIZE_LIMIT, "Container size limit exceeded")
          end
        else
          expect(reader_of("#{size}\x55").read_map_begin).to eq([Thrift::Types::I32, Thrift::Types::I32, as_int32])
          %i[read_list_begin read_set_begin].each { |m| expect(reader_of("\xF5#{size}").public_send(m)).to eq([Thrift::Types::I32, as_int32]) }
        end
      end
    end

    it "rejects binary sizes above INT32_MAX before calling read_all" do
      ["\x80\x80\x80\x80\x08", "\xFF\xFF\xFF\xFF\x0F"].each do |size|
        t = Thrift::MemoryBufferTransport.new(size.b)
        expect(t).not_to receive(:read_all)
        expect { described_class.new(t).read_binary }.to protocol_error(Thrift::ProtocolException::SIZE_LIMIT, "Binary size limit exceeded")
        expect { reader_of(size).read_string }.to protocol_error(Thrift::ProtocolException::SIZE_LIMIT, "Binary size limit exceeded")
      end
    end

    it "passes a size up to INT32_MAX on to read_all" do
      t = Thrift::MemoryBufferTransport.new("\xFF\xFF\xFF\xFF\x07".b)
      expect(t).to receive(:read_all).with(2**31 - 1).and_return("payload")
      expect(described_class.new(t).read_binary).to eq("payload")
    end

    it "raises EOFError for a huge declared size without reserving memory for it" do
      r = reader_of("\xFF\xFF\xFF\xFF\x07abc")
      error = nil
      before = GC.stat(:total_allocated_objects)
      begin
        r.read_binary
      rescue EOFError => e
        error = e
      end
      expect(GC.stat(:total_allocated_objects) - before).to be < 10
      expect(error).to be_a(EOFError)
      expect(r.trans.available).to eq(SpecSupport.newer?(:memory_buffer_read_all) ? 3 : 0)
    end

    it "raises TypeError when @last_field is empty or not an Array, never crashing" do
      prot.instance_variable_set(:@last_field, [])
      feed("\x15\x05\x02")
      expect { prot.read_field_begin }.to raise_error(TypeError, "no implicit conversion from nil to integer")
      expect { prot.read_field_begin }.to raise_error(TypeError, "no implicit conversion from nil to integer")
      expect { prot.write_field_begin("f", 8, 1) }.to raise_error(TypeError)
      prot.instance_variable_set(:@last_field, nil)
      expect { prot.write_struct_begin("S") }.to raise_error(TypeError)
      expect { prot.read_struct_end }.to raise_error(TypeError)
      prot.instance_variable_set(:@last_field, [0].freeze)
      expect { prot.read_struct_begin }.to raise_error(FrozenError)
    end

    it "reads the transport afresh after a stack entry's to_int has run Ruby code" do
      entry = Object.new
      t = trans
      entry.define_singleton_method(:to_int) { t.reset_buffer("".b) && 1 }
      feed("\x05\x02")
      prot.instance_variable_set(:@last_field, [entry])
      expect { prot.read_field_begin }.to raise_error(EOFError)
    end
  end

  describe "the dispatch path" do
    it "reads varints with one read_byte per byte and doubles with read_into_buffer(@rbuf, 8)" do
      feed("\xD8\x04\x00\x00\x00\x00\x00\x00\xF0\x3F")
      expect(trans).to receive(:read_byte).twice.and_call_original
      expect(prot.read_i32).to eq(300)
      rbuf = prot.instance_variable_get(:@rbuf)
      expect(trans).to receive(:read_into_buffer).with(rbuf, 8).and_call_original
      expect(prot.read_double).to eq(1.0)
    end

    it "reads strings with read_byte for the length and read_all for the bytes, uuids with read_all(16)" do
      feed("\x02hi#{"\x01" * 16}")
      expect(trans).to receive(:read_byte).once.and_call_original
      expect(trans).to receive(:read_all).with(2).and_call_original
      expect(prot.read_string).to eq("hi")
      expect(trans).to receive(:read_all).with(16).and_call_original
      expect(prot.read_uuid).to eq("01010101-0101-0101-0101-010101010101")
    end

    it "writes each varint byte, each header byte and the payload in separate trans.write calls" do
      calls = []
      allow(trans).to receive(:write) { |s| calls << s.dup }
      prot.write_i32(300)
      prot.write_message_begin("ab", 1, 7)
      prot.write_struct_begin("S")
      prot.write_field_begin("c", Thrift::Types::I64, 30)
      prot.write_double(1.0)
      prot.write_list_begin(Thrift::Types::I32, 300)
      prot.write_uuid("00112233-4455-6677-8899-aabbccddeeff")
      expect(calls).to eq(["\xD8", "\x04", "\x82", "\x21", "\x07", "\x02", "ab", "\x06", "\x3C",
                           "\x00\x00\x00\x00\x00\x00\xF0\x3F", "\xF5", "\xAC", "\x02",
                           "\x00\x11\x22\x33\x44\x55\x66\x77\x88\x99\xAA\xBB\xCC\xDD\xEE\xFF"].map(&:b))
      expect(calls.map(&:encoding).uniq).to eq([Encoding::BINARY])
    end

    it "hands write a copy of a binary's bytes" do
      payload = "xyz".b
      written_objects = []
      allow(trans).to receive(:write) { |s| written_objects << s }
      prot.write_binary(payload)
      expect(written_objects.last).to eq(payload)
      expect(written_objects.last).not_to be(payload)
    end

    it "works over any transport object with the right methods" do
      t = CustomTransport.new
      w = described_class.new(t)
      w.write_struct_begin("S")
      w.write_field_begin("b", Thrift::Types::BOOL, 3)
      w.write_bool(true)
      w.write_i16(-2)
      w.write_string("ok")
      w.write_double(-2.5)
      w.write_uuid("00112233-4455-6677-8899-aabbccddeeff")
      r = described_class.new(CustomTransport.new(t.out.dup))
      r.read_struct_begin
      expect([r.read_field_begin, r.read_bool, r.read_i16, r.read_string, r.read_double, r.read_uuid])
        .to eq([[nil, Thrift::Types::BOOL, 3], true, -2, "ok", -2.5, "00112233-4455-6677-8899-aabbccddeeff"])
    end

    it "gives the same errors and leaves the same bytes unread for bad input" do
      sub = Class.new(Thrift::MemoryBufferTransport)
      inputs = ["\x80\x80\x80\x80\x80\x01\x02", "\x80\x80\x80\x80\x10\x02", "\x80\x80", "#{"\x80" * 11}\x02",
                "\xFF\xFF\xFF\xFF\x07abc", "\x80\x80\x80\x80\x08\x01", "\x1E\x01", "\xF5\x80\x80\x80\x80\x08",
                "\x01\xE8", "\x05abc", "\x81", "\x82\x02", "\x82\x21\x00\x05ab", "\x05\x80"]
      methods = %i[read_i16 read_i32 read_i64 read_binary read_string read_field_begin read_list_begin read_map_begin
                   read_message_begin read_double read_uuid]
      outcome = lambda do |t, m|
        result = begin
          described_class.new(t).public_send(m)
        rescue StandardError => e
          Outcome.error(e)
        end
        [result, t.available]
      end
      inputs.product(methods).each do |bytes, m|
        plain = outcome.call(Thrift::MemoryBufferTransport.new(bytes.b), m)
        expect(outcome.call(sub.new(bytes.b), m)).to eq(plain), "#{m} of #{bytes.inspect}"
      end
    end

    it "gives the same results, bytes and buffer state as the fast path" do
      sub = Class.new(Thrift::MemoryBufferTransport)
      run = lambda do |t|
        p = described_class.new(t)
        # Enough bytes that the buffer is compacted (GARBAGE_BUFFER_SIZE) in the middle of a varint.
        t.write("\x00".b * 4094)
        4094.times { p.read_byte }
        p.write_i64(-(2**62))
        p.write_string("ünïcode")
        p.write_struct_begin("S")
        p.write_field_begin("f", Thrift::Types::BOOL, 20)
        p.write_bool(false)
        p.write_map_begin(Thrift::Types::I32, Thrift::Types::STRING, 5)
        out = [p.read_i64, t.instance_variable_get(:@index), t.instance_variable_get(:@buf).bytesize, p.read_string]
        r = described_class.new(t)
        r.read_struct_begin
        out + [r.read_field_begin, r.read_bool, r.read_map_begin, t.available,
               (r.read_i32 rescue $!.class)]
      end
      plain = run.call(Thrift::MemoryBufferTransport.new)
      expect(plain).to eq(run.call(sub.new))
      expect(plain.first).to eq(-(2**62))
      expect(plain.last).to eq(EOFError)
    end
  end
end
