# frozen_string_literal: true

RSpec.describe Thrift::MemoryBufferTransport do
  let(:trans) { described_class.new }

  def state
    [trans.instance_variable_get(:@buf), trans.instance_variable_get(:@index)]
  end

  it "has thrift_native's write, read, read_all, read_byte and read_into_buffer" do
    expect(ThriftNative.const_get(:NATIVE_METHODS)[described_class]).to contain_exactly(:write, :read, :read_all, :read_byte, :read_into_buffer)
  end

  describe "#write" do
    it "appends in place and returns nil" do
      buf = state[0]
      expect(trans.write("ab")).to be_nil
      expect(trans.write("\xFF".b)).to be_nil
      expect(state[0]).to equal(buf)
      expect(buf).to eq("ab\xFF".b)
      expect(buf.encoding).to eq(Encoding::BINARY)
    end

    it "re-tags the caller's String as BINARY (a spec of thrift's asserts it) unless it is frozen" do
      s = +"é"
      trans.write(s)
      expect(s.encoding).to eq(Encoding::BINARY)
      trans.write("frozen é")
      expect(trans.available).to eq(2 + 9)
    end

    it "raises NoMethodError for nil and Symbols, as Thrift::Bytes does" do
      expect { trans.write(nil) }.to raise_error(NoMethodError)
      expect { trans.write(:a) }.to raise_error(NoMethodError)
    end

    it "raises FrozenError into a frozen buffer" do
      trans.instance_variable_set(:@buf, "x".b.freeze)
      expect { trans.write("y") }.to raise_error(FrozenError)
    end
  end

  describe "#read" do
    before { trans.write("abcdef") }

    it "returns BINARY data and advances" do
      data = trans.read(4)
      expect([data, data.encoding, trans.available]).to eq(["abcd", Encoding::BINARY, 2])
      expect(trans.read(0)).to eq("")
    end

    it "consumes what is left, then raises EOFError" do
      expect { trans.read(10) }.to raise_error(EOFError, "Not enough bytes remain in memory buffer")
      expect(trans.available).to eq(0)
    end

    it "raises TransportException NEGATIVE_SIZE (5 on thrift 0.14) for a negative length" do
      expect { trans.read(-1) }.to raise_error(Thrift::TransportException, "Negative size") { |e|
        expect(e.type).to eq(ThriftNative::THRIFT_FEATURES[:transport_negative_size])
      }
      expect { trans.read(nil) }.to raise_error(TypeError)
      expect(trans.read(1.9)).to eq("a")
    end
  end

  describe "#read_all" do
    before { trans.write("abcdef") }

    it "reads exactly n bytes" do
      expect(trans.read_all(3)).to eq("abc")
      expect(trans.read_all(0)).to eq("")
      expect(trans.read_all(3).encoding).to eq(Encoding::BINARY)
    end

    it "consumes nothing when too few bytes remain, and refuses a negative size (thrift 0.24 on)",
       if: SpecSupport.newer?(:memory_buffer_read_all) do
      expect { trans.read_all(7) }.to raise_error(EOFError, "Not enough bytes remain in memory buffer")
      expect(trans.available).to eq(6)
      expect { trans.read_all(-2) }.to raise_error(Thrift::TransportException, "Negative size")
    end

    it "consumes what remains when too few bytes do, and answers \"\" for a negative size, as BaseTransport#read_all " \
       "over the C accelerator's read did (before thrift 0.24)", unless: SpecSupport.newer?(:memory_buffer_read_all) do
      expect { trans.read_all(7) }.to raise_error(EOFError, "Not enough bytes remain in memory buffer")
      expect(trans.available).to eq(0)
      trans.write("ab")
      expect([trans.read_all(-2), trans.read_all(-2).encoding, trans.available]).to eq(["", Encoding::BINARY, 2])
    end
  end

  describe "#read_byte" do
    it "returns unsigned bytes (signed before thrift master, as its C accelerator) and raises EOFError at the end without moving" do
      trans.write("\xFF\x01".b)
      expect([trans.read_byte, trans.read_byte]).to eq([SpecSupport.newer?(:memory_buffer_fixes) ? 255 : -1, 1])
      expect { trans.read_byte }.to raise_error(EOFError)
      expect(state[1]).to eq(2)
    end
  end

  describe "#read_into_buffer" do
    let(:buf) { "\x00".b * 4 }

    before { trans.write("abcdef") }

    it "copies size bytes and returns the count" do
      expect(trans.read_into_buffer(buf, 3)).to eq(3)
      expect(buf).to eq("abc\x00".b)
      expect(trans.available).to eq(3)
    end

    it "does nothing for size <= 0, even with a frozen buffer" do
      expect(trans.read_into_buffer("".freeze, 0)).to eq(0)
      expect(trans.read_into_buffer(nil, -1)).to eq(0)
      expect(trans.available).to eq(6)
    end

    it "checks end of data first, then the buffer" do
      trans.read(6)
      expect { trans.read_into_buffer(nil, 1) }.to raise_error(EOFError)
      trans.write("z")
      expect { trans.read_into_buffer(nil, 1) }.to raise_error(TypeError)
      expect { trans.read_into_buffer(+"", 1) }.to raise_error(IndexError, "index 0 out of string")
      expect { trans.read_into_buffer("ab".freeze, 1) }.to raise_error(FrozenError)
      expect(trans.available).to eq(1)
    end

    it "keeps partial progress when the input runs out (before thrift master: consumes nothing)" do
      expect { trans.read_into_buffer("\x00".b * 10, 8) }.to raise_error(EOFError)
      expect(trans.available).to eq(SpecSupport.newer?(:memory_buffer_fixes) ? 0 : 6)
    end

    it "raises IndexError when the buffer is too short, keeping partial progress (before thrift master: none)" do
      short = "\x00".b * 2
      expect { trans.read_into_buffer(short, 4) }.to raise_error(IndexError, "index 2 out of string")
      expect(short).to eq("ab")
      expect(trans.available).to eq(SpecSupport.newer?(:memory_buffer_fixes) ? 4 : 6)
    end
  end

  describe "compaction at GARBAGE_BUFFER_SIZE" do
    it "drops the consumed front of the buffer once the index passes 4096, with every read method" do
      data = (0...6000).map { |i| (i % 251).chr }.join.b
      %i[read read_all read_byte read_into_buffer binary_i32].each do |how|
        t = described_class.new(data.dup)
        p = Thrift::BinaryProtocolAccelerated.new(t)
        consumed = 0
        out = +"".b
        while consumed < 4100
          case how
          when :read then out << t.read(100)
          when :read_all then out << t.read_all(100)
          when :read_byte then out << (t.read_byte & 0xFF).chr
          when :read_into_buffer then (b = "\x00".b * 4; t.read_into_buffer(b, 4); out << b)
          when :binary_i32 then out << [p.read_i32].pack("l>")
          end
          consumed = out.bytesize
        end
        buf, index = t.instance_variable_get(:@buf), t.instance_variable_get(:@index)
        expect(out).to eq(data.byteslice(0, consumed))
        expect(buf).to eq(data.byteslice((consumed - index)..)), how.to_s
        expect(consumed - index).to be >= 4096
        expect(t.available).to eq(data.bytesize - consumed)
        expect(t.read(t.available)).to eq(data.byteslice(consumed..))
      end
    end
  end

  it "keeps @buf and @index consistent for the Ruby methods available, peek and reset_buffer" do
    p = Thrift::BinaryProtocolAccelerated.new(trans)
    p.write_i64(1)
    p.write_i32(2)
    expect([trans.available, trans.peek]).to eq([12, true])
    p.read_i64
    expect(trans.available).to eq(4)
    trans.reset_buffer("\x00\x00\x00\x09".b)
    expect(p.read_i32).to eq(9)
    expect([trans.available, trans.peek]).to eq([0, false])
  end

  it "raises FrozenError when a frozen transport would have to move" do
    trans.write("abcd")
    trans.freeze
    expect { trans.read_byte }.to raise_error(FrozenError)
    expect { Thrift::BinaryProtocolAccelerated.new(trans).read_i16 }.to raise_error(FrozenError)
    expect(trans.available).to eq(4)
  end
end
