# frozen_string_literal: true

require_relative "../support/helpers/protocol_context"

RSpec.describe Thrift::BinaryProtocolAccelerated do
  include_context "a protocol over a memory buffer"
  it_behaves_like "a protocol whose read ends are nil"

  it "is a BinaryProtocol whose methods are thrift_native's" do
    expect(described_class.superclass).to be(Thrift::BinaryProtocol)
    expect(prot.native?).to be(true)
    expect(ThriftNative.active?).to be(true)
    expect(ThriftNative.const_get(:NATIVE_METHODS)[described_class]).to include(:read_i32, :write_uuid, :read_message_begin)
  end

  describe "writes (exact bytes)" do
    {
      [:write_byte, -1] => "\xFF", [:write_byte, 127] => "\x7F",
      [:write_bool, true] => "\x01", [:write_bool, false] => "\x00", [:write_bool, nil] => "\x00", [:write_bool, 0] => "\x01",
      [:write_i16, -2] => "\xFF\xFE", [:write_i16, 0x1234] => "\x12\x34",
      [:write_i32, -2] => "\xFF\xFF\xFF\xFE", [:write_i32, 0x01020304] => "\x01\x02\x03\x04",
      [:write_i64, -(2**63)] => "\x80\x00\x00\x00\x00\x00\x00\x00", [:write_i64, 2**40] => "\x00\x00\x01\x00\x00\x00\x00\x00",
      [:write_double, 1.0] => "\x3F\xF0\x00\x00\x00\x00\x00\x00", [:write_double, -0.0] => "\x80\x00\x00\x00\x00\x00\x00\x00",
      [:write_double, 2] => "\x40\x00\x00\x00\x00\x00\x00\x00", [:write_double, "1.5"] => "\x3F\xF8\x00\x00\x00\x00\x00\x00",
      [:write_string, "héllo"] => "\x00\x00\x00\x06h\xC3\xA9llo", [:write_string, ""] => "\x00\x00\x00\x00",
      [:write_binary, "\x00\xFF".b] => "\x00\x00\x00\x02\x00\xFF",
      [:write_uuid, "00112233-4455-6677-8899-AABBCCDDEEFF"] => "\x00\x11\x22\x33\x44\x55\x66\x77\x88\x99\xAA\xBB\xCC\xDD\xEE\xFF",
      [:write_field_begin, "name", 8, 3] => "\x08\x00\x03", [:write_field_stop] => "\x00",
      [:write_map_begin, 11, 8, 2] => "\x0B\x08\x00\x00\x00\x02",
      [:write_list_begin, 12, 1] => "\x0C\x00\x00\x00\x01", [:write_set_begin, 6, 0] => "\x06\x00\x00\x00\x00",
      [:write_message_begin, "ping", 1, 7] => "\x80\x01\x00\x01\x00\x00\x00\x04ping\x00\x00\x00\x07",
      [:write_message_begin, "x", -1, 0] => "\xFF\xFF\xFF\xFF\x00\x00\x00\x01x\x00\x00\x00\x00"
    }.each do |(method, *args), bytes|
      it "#{method}(#{args.map(&:inspect).join(", ")}) writes #{bytes.b.unpack1("H*")}" do
        expect(prot.public_send(method, *args)).to be_nil
        expect(written).to eq(bytes.b)
      end
    end

    it "writes the old message header when strict_write is not exactly true" do
      described_class.new(trans, true, :yes).write_message_begin("ab", 2, 9)
      expect(written).to eq("\x00\x00\x00\x02ab\x02\x00\x00\x00\x09".b)
    end

    it "writes the same bytes as pure-Ruby BinaryProtocol for every primitive" do
      pure_trans = Thrift::MemoryBufferTransport.new
      pure = Thrift::BinaryProtocol.new(pure_trans)
      [[:write_byte, -128], [:write_i16, -32_768], [:write_i32, 2**31 - 1], [:write_i64, 2**63 - 1],
       [:write_double, Math::PI], [:write_string, "ü"], [:write_binary, "\x80".b], [:write_bool, true],
       [:write_map_begin, 1, 2, 3], [:write_list_begin, 4, 5], [:write_field_begin, "f", 10, -1], [:write_field_stop],
       [:write_message_begin, "call", 1, 42]].each do |method, *args|
        prot.public_send(method, *args)
        pure.public_send(method, *args)
      end
      expect(written).to eq(pure_trans.read(pure_trans.available))
    end

    it "are no-ops for the *_end methods and write_struct_begin" do
      %i[write_message_end write_struct_end write_field_end write_map_end write_list_end write_set_end].each do |m|
        expect(prot.public_send(m)).to be_nil
      end
      expect(prot.write_struct_begin("S")).to be_nil
      expect(written).to eq("")
    end

    it "re-tags a non-binary String given to write_binary as BINARY, in place, as the C accelerator does" do
      s = +"abc"
      prot.write_binary(s)
      expect(s.encoding).to eq(Encoding::BINARY)
      frozen = "xyz"
      prot.write_binary(frozen)
      expect(frozen.encoding).to eq(Encoding::UTF_8)
    end

    it "does not re-tag the caller's String in write_string" do
      s = +"abc"
      prot.write_string(s)
      expect(s.encoding).to eq(Encoding::UTF_8)
    end

    it "converts non-UTF-8 Strings to UTF-8 before writing them" do
      prot.write_string("\xE9".dup.force_encoding("ISO-8859-1"))
      expect(written).to eq("\x00\x00\x00\x02\xC3\xA9".b)
    end
  end

  describe "write errors (class, message)" do
    it "rejects nil where the C accelerator does, with StandardError" do
      %i[write_byte write_i16 write_i32 write_i64 write_double write_string write_binary].each do |m|
        expect(error_of { prot.public_send(m, nil) }).to eq([StandardError, "nil argument not allowed!"])
      end
    end

    # thrift 0.24 on: range-checked (the C accelerator of the loaded thrift decides; loading_spec runs these checks
    # on any thrift by giving it BinaryProtocol::BYTE_MAX). Before: NUM2INT/NUM2LL, low bytes kept, as Debian's 0.14
    # C accelerator answers these very calls.
    if ThriftNative::THRIFT_FEATURES[:checked_binary_writes]
      it "checks integer ranges" do
        {
          write_byte: [128, -129], write_i16: [2**15, -(2**15) - 1], write_i32: [2**31, -(2**31) - 1]
        }.each do |m, values|
          values.each { |v| expect(error_of { prot.public_send(m, v) }).to eq([RangeError, "integer out of bounds"]) }
        end
        expect(error_of { prot.write_i64(2**64) }).to eq([RangeError, RubyFacts.long_long_range_message])
        expect(error_of { prot.write_list_begin(1, -1) }).to eq([RangeError, "integer out of bounds"])
        expect(error_of { prot.write_map_begin(1, 1, 2**31) }).to eq([RangeError, "integer out of bounds"])
      end

      it "wants Integers" do
        expect(error_of { prot.write_i32("1") }).to eq([TypeError, "integer argument expected"])
        expect(error_of { prot.write_i16(1.0) }).to eq([TypeError, "integer argument expected"])
        expect(error_of { prot.write_field_begin("f", nil, 1) }).to eq([TypeError, "integer argument expected"])
        expect(error_of { prot.write_map_begin(1, 2, nil) }).to eq([TypeError, "integer argument expected"])
      end

      it "writes what came before a failing argument, as the C accelerator's interleaved checks do" do
        expect { prot.write_field_begin("f", 8, 2**15) }.to raise_error(RangeError)
        expect(written).to eq("\x08".b)
      end
    else
      {
        [:write_byte, 128] => "\x80", [:write_byte, -129] => "\x7F", [:write_byte, 1.9] => "\x01",
        [:write_i16, 2**15] => "\x80\x00", [:write_i16, -(2**15) - 1] => "\x7F\xFF", [:write_i16, 1.0] => "\x00\x01",
        [:write_i64, 1.5] => "\x00\x00\x00\x00\x00\x00\x00\x01", [:write_list_begin, 1, -1] => "\x01\xFF\xFF\xFF\xFF",
        [:write_field_begin, "f", 8, 2**15] => "\x08\x80\x00",
        [:write_message_begin, "a", 200, 1] => "\x80\x01\x00\xC8\x00\x00\x00\x01a\x00\x00\x00\x01"
      }.each do |(method, *args), bytes|
        it "#{method}(#{args.map(&:inspect).join(", ")}) keeps the low bytes: #{bytes.b.unpack1("H*")}" do
          prot.public_send(method, *args)
          expect(written).to eq(bytes.b)
        end
      end

      it "raises what NUM2INT and NUM2LL raise, after what came before" do
        expect(error_of { prot.write_i32(2**31) }).to eq([RangeError, RubyFacts.int_range_message(2**31)])
        expect(error_of { prot.write_i32(-(2**31) - 1) }).to eq([RangeError, RubyFacts.int_range_message(-(2**31) - 1)])
        expect(error_of { prot.write_i64(2**64) }).to eq([RangeError, RubyFacts.long_long_range_message])
        expect(error_of { prot.write_i32("1") }).to eq([TypeError, "no implicit conversion of String into Integer"])
        expect(error_of { prot.write_field_begin("f", nil, 1) }).to eq([TypeError, "no implicit conversion from nil to integer"])
        expect(written).to eq("".b)
        expect(error_of { prot.write_map_begin(1, 2, nil) }).to eq([TypeError, "no implicit conversion from nil to integer"])
        expect(written).to eq("\x01\x02".b)
      end
    end

    it "rejects non-Strings in write_string and non-numeric doubles" do
      expect(error_of { prot.write_string(:sym) }).to eq([StandardError, "Value should be a string"])
      expect(error_of { prot.write_double("abc") }).to eq([ArgumentError, 'invalid value for Float(): "abc"'])
      expect(error_of { prot.write_double(:x) }).to eq([TypeError, "can't convert Symbol into Float"])
    end

    it "raises INVALID_DATA for bad UUIDs" do
      ["00112233-4455-6677-8899-aabbccddeef", "0011223304455-6677-8899-aabbccddeeff",
       "00112233-4455-6677-8899-aabbccddeefg"].each do |bad|
        expect { prot.write_uuid(bad) }.to raise_error(Thrift::ProtocolException, "Invalid UUID format") { |e|
          expect(e.type).to eq(Thrift::ProtocolException::INVALID_DATA)
        }
      end
      [nil, 12, :sym].each do |bad|
        expect { prot.write_uuid(bad) }.to raise_error(Thrift::ProtocolException, "UUID must be a string") { |e|
          expect(e.type).to eq(Thrift::ProtocolException::INVALID_DATA)
        }
      end
      expect(written).to eq("")
    end
  end

  describe "reads" do
    it "round-trips every type at its boundaries" do
      values = {
        byte: [-128, -1, 0, 127], bool: [true, false], i16: [-32_768, -1, 0, 32_767],
        i32: [-(2**31), -1, 0, 2**31 - 1], i64: [-(2**63), -(2**62) - 1, 2**62, 2**63 - 1],
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
      nan = (prot.write_double(Float::NAN); prot.read_double)
      expect(nan).to be_nan
      expect(trans.available).to eq(0)
    end

    it "returns Strings in the C accelerator's encodings" do
      prot.write_string("é")
      prot.write_binary("é")
      prot.write_uuid("01234567-89ab-cdef-0123-456789abcdef")
      expect(prot.read_string.encoding).to eq(Encoding::UTF_8)
      expect(prot.read_binary.encoding).to eq(Encoding::BINARY)
      expect(prot.read_uuid.encoding).to eq(Encoding::BINARY)
    end

    it "does not validate UTF-8 in read_string" do
      feed("\x00\x00\x00\x01\xFF")
      s = prot.read_string
      expect([s.bytes, s.encoding, s.valid_encoding?]).to eq([[255], Encoding::UTF_8, false])
    end

    it "reads signed bytes and field headers" do
      feed("\x80\x0C\x00\x05\x00")
      expect(prot.read_byte).to eq(-128)
      expect(prot.read_field_begin).to eq([nil, 12, 5])
      expect(prot.read_field_begin).to eq([nil, 0, 0])
    end

    it "reads container headers, and negative sizes as the loaded thrift does (0.24 on: NEGATIVE_SIZE)" do
      feed("\x0B\x08\x00\x00\x00\x02\x0C\x00\x00\x00\x01\x06\x00\x00\x00\x00")
      expect(prot.read_map_begin).to eq([11, 8, 2])
      expect(prot.read_list_begin).to eq([12, 1])
      expect(prot.read_set_begin).to eq([6, 0])
      %i[read_map_begin read_list_begin read_set_begin read_binary read_string].each do |m|
        trans.reset_buffer(m == :read_map_begin ? "\x01\x01\xFF\xFF\xFF\xFF".b : "\x01\xFF\xFF\xFF\xFF".b)
        trans.read_byte unless %i[read_map_begin read_list_begin read_set_begin].include?(m)
        if SpecSupport.newer?(:negative_sizes_refused)
          expect { prot.public_send(m) }.to raise_error(Thrift::ProtocolException, "Negative size") { |e|
            expect(e.type).to eq(Thrift::ProtocolException::NEGATIVE_SIZE)
          }
        else
          # As they are; a byte string's negative length was asked of `read_all`, which answered "".
          expected = { read_map_begin: [1, 1, -1], read_list_begin: [1, -1], read_set_begin: [1, -1] }.fetch(m, "")
          expect(prot.public_send(m)).to eq(expected)
        end
      end
    end

    it "reads bool as any non-zero byte" do
      feed("\x00\x01\x02\xFF")
      expect(4.times.map { prot.read_bool }).to eq([false, true, true, true])
    end

  end

  describe "read_message_begin" do
    it "reads a strict header" do
      prot.write_message_begin("getName", Thrift::MessageTypes::REPLY, 123)
      expect(prot.read_message_begin).to eq(["getName", 2, 123])
    end

    it "reads a type byte from 0 to 255" do
      feed("\x80\x01\x00\xFE\x00\x00\x00\x00\x00\x00\x00\x01")
      expect(prot.read_message_begin).to eq(["", 254, 1])
    end

    # BAD_VERSION from thrift 0.23 on; type 0 before, where the C accelerator never set its BAD_VERSION.
    bad_version = ThriftNative::THRIFT_FEATURES[:typed_errors] ? Thrift::ProtocolException::BAD_VERSION : 0

    it "rejects a wrong version with BAD_VERSION (#{bad_version} with the loaded thrift)" do
      feed("\x80\x02\x00\x01\x00\x00\x00\x00\x00\x00\x00\x01")
      expect { prot.read_message_begin }.to raise_error(Thrift::ProtocolException, "Missing version identifier") { |e|
        expect(e.type).to eq(bad_version)
      }
    end

    it "rejects the old format when strict_read is true" do
      feed("\x00\x00\x00\x01a\x01\x00\x00\x00\x01")
      expect { prot.read_message_begin }.to raise_error(Thrift::ProtocolException, "No version identifier, old protocol client?") { |e|
        expect(e.type).to eq(bad_version)
      }
    end

    it "reads the old format when strict_read is off, with a BINARY name" do
      old = described_class.new(trans, false, false)
      old.write_message_begin("héllo", 3, -5)
      name, type, seqid = old.read_message_begin
      expect([name, name.encoding, type, seqid]).to eq(["héllo".b, Encoding::BINARY, 3, -5])
    end

    it "calls trans.reset_message_size first when @reset_message_size is set" do
      prot.instance_variable_set(:@reset_message_size, true)
      def trans.reset_message_size
        @reset_calls = (@reset_calls || 0) + 1
      end
      prot.write_message_begin("a", 1, 1)
      prot.read_message_begin
      expect(trans.instance_variable_get(:@reset_calls)).to eq(1)
    end
  end

  describe "end of data" do
    it "raises EOFError for every fixed-width read of a short buffer" do
      { read_byte: 0, read_bool: 0, read_i16: 1, read_i32: 3, read_i64: 7, read_double: 7, read_uuid: 15 }.each do |m, n|
        trans.reset_buffer("\x01".b * n)
        expect { prot.public_send(m) }.to raise_error(EOFError)
      end
    end

    it "consumes what a short fixed-width read found as read_into_buffer does (before thrift master: nothing), and of a short read_uuid what read_all does" do
      trans.reset_buffer("\x01\x02".b)
      expect { prot.read_i32 }.to raise_error(EOFError, "Not enough bytes remain in memory buffer")
      expect(trans.available).to eq(SpecSupport.newer?(:memory_buffer_fixes) ? 0 : 2)
      trans.reset_buffer("\x01".b * 10)
      expect { prot.read_uuid }.to raise_error(EOFError)
      expect(trans.available).to eq(SpecSupport.newer?(:memory_buffer_read_all) ? 10 : 0)
    end

    it "consumes the length but not the payload of a short string (before thrift 0.24, BaseTransport#read_all: both)" do
      feed("\x00\x00\x00\x05abc")
      expect { prot.read_string }.to raise_error(EOFError)
      expect(trans.available).to eq(SpecSupport.newer?(:memory_buffer_read_all) ? 3 : 0)
    end
  end

  describe "the dispatch path" do
    it "calls read_into_buffer(@rbuf, n) on a transport with stubbed methods" do
      rbuf = prot.instance_variable_get(:@rbuf)
      expect(trans).to receive(:read_into_buffer).with(rbuf, 4) do |buf, _n|
        buf.replace("\x00\x00\x01\x00\xAA\xAA\xAA\xAA".b)
        4
      end
      expect(prot.read_i32).to eq(256)
    end

    it "calls read_byte, read_all and write as the C accelerator does" do
      expect(trans).to receive(:read_byte).and_return(0xFF)
      expect(prot.read_byte).to eq(-1)
      expect(trans).to receive(:read_all).with(16).and_return("\x01".b * 16)
      expect(prot.read_uuid).to eq("01010101-0101-0101-0101-010101010101")
      expect(trans).to receive(:write).with("\x00\x00\x00\x07".b).ordered
      expect(trans).to receive(:write).with("\x00\x00\x00\x03".b).ordered
      expect(trans).to receive(:write).with("abc".b).ordered
      prot.write_i32(7)
      prot.write_string("abc")
    end

    it "reads through read_all for binary and strings" do
      expect(trans).to receive(:read_into_buffer).and_wrap_original { |m, *args| m.call(*args) }
      expect(trans).to receive(:read_all).with(2).and_call_original
      feed("\x00\x00\x00\x02hi")
      expect(prot.read_binary).to eq("hi".b)
    end

    it "works over any transport object with the right methods" do
      t = CustomTransport.new
      p = described_class.new(t)
      p.write_i16(-2)
      p.write_string("ok")
      p.write_uuid("00112233-4455-6677-8899-aabbccddeeff")
      bytes = t.out
      r = described_class.new(CustomTransport.new(bytes.dup))
      expect([r.read_i16, r.read_string, r.read_uuid]).to eq([-2, "ok", "00112233-4455-6677-8899-aabbccddeeff"])
    end

    it "takes the dispatch path for a subclass of MemoryBufferTransport, with the same results" do
      sub = Class.new(Thrift::MemoryBufferTransport) do
        attr_reader :calls

        def read_into_buffer(*args)
          (@calls ||= []) << :read_into_buffer
          super
        end
      end.new
      p = described_class.new(sub)
      p.write_i32(-77)
      expect(p.read_i32).to eq(-77)
      expect(sub.calls).to eq([:read_into_buffer])
    end

    it "notices a method redefined on MemoryBufferTransport itself" do
      code = <<~RUBY
        t = Thrift::MemoryBufferTransport.new
        p = Thrift::BinaryProtocolAccelerated.new(t)
        p.write_i32(1)
        calls = 0
        Thrift::MemoryBufferTransport.class_eval do
          alias_method :original_read_into_buffer, :read_into_buffer
          define_method(:read_into_buffer) { |*a| calls += 1; original_read_into_buffer(*a) }
        end
        p p.read_i32, calls, ThriftNative.active?
      RUBY
      expect(ChildRuby.eval(code, accelerator: :ours)).to eq("1\n1\nfalse\n")
    end
  end
end
