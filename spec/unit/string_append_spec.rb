# frozen_string_literal: true

# Bytes appended to a String (a write buffer, MemoryBufferTransport's @buf) are copied into the room it has without a
# call to rb_str_cat where they fit (ext/thrift_native/src/ruby/str_cat.rs); every other String goes through
# rb_str_cat. Either way the String must end as rb_str_cat leaves it: its bytes, its encoding, what it knows of its
# contents (the coderange Ruby caches), its frozen and chilled states, and the Strings it shares bytes with untouched.
RSpec.describe "Bytes appended to a String" do
  # A MemoryBufferTransport writing into `buf` (set as its @buf as is: the constructor would re-tag it BINARY).
  def writer(buf)
    Thrift::MemoryBufferTransport.new.tap { |t| t.instance_variable_set(:@buf, buf) }
  end

  # What Ruby answers for a fresh String of these bytes and encoding (nothing cached).
  def fresh(str)
    String.new(str.b, encoding: str.encoding)
  end

  it "forgets what the String knew of its contents, so that ascii_only? and valid_encoding? see the new bytes" do
    [Encoding::BINARY, Encoding::UTF_8, Encoding::US_ASCII].each do |encoding|
      buf = String.new("ab", encoding: encoding, capacity: 256)
      t = writer(buf)
      ["\xE2\x82".b, "\xAC".b, "\xFF".b, "cd".b].each do |bytes|
        [buf.ascii_only?, buf.valid_encoding?] # Ruby caches the answer (the coderange)
        t.write(bytes)
        expect(buf).to equal(t.instance_variable_get(:@buf))
        expect([buf.encoding, buf.ascii_only?, buf.valid_encoding?, buf.hash])
          .to eq([encoding, fresh(buf).ascii_only?, fresh(buf).valid_encoding?, fresh(buf).hash])
      end
      expect(buf.b).to eq("ab\xE2\x82\xAC\xFFcd".b)
    end
  end

  it "appends a String to itself, leaves the String a shared one was sliced from alone, and grows a full one" do
    buf = String.new("ab", encoding: Encoding::BINARY, capacity: 64)
    writer(buf).write(buf)
    expect(buf).to eq("abab")
    whole = ("x" * 100).b
    part = whole.byteslice(0, 60) # shares whole's bytes
    writer(part).write("yz")
    expect([part, whole]).to eq([("x" * 60) + "yz", "x" * 100])
    full = String.new("", encoding: Encoding::BINARY, capacity: 8)
    t = writer(full)
    20.times { |i| t.write(i.chr * 7) }
    expect(full).to eq(Array.new(20) { |i| i.chr * 7 }.join.b)
  end

  it "raises FrozenError for a frozen String and appends to a UTF-16 one as rb_str_cat does" do
    expect { writer("ab".b.freeze).write("c") }.to raise_error(FrozenError)
    wide = "a".encode(Encoding::UTF_16LE)
    writer(wide).write("b\0".b)
    expect([wide.encoding, wide.bytes, wide.valid_encoding?]).to eq([Encoding::UTF_16LE, [97, 0, 98, 0], true])
  end

  # Ruby 3.4 on: a literal not frozen by the magic comment is "chilled"; its first change warns (with deprecation
  # warnings on) and unchills it, as `<<` does.
  it "warns for a chilled literal as Ruby's own append does", if: RUBY_VERSION >= "3.4" do
    deprecated = Warning[:deprecated]
    literal = -> { eval("# encoding: ascii-8bit\n'ab'") } # rubocop:disable Security/Eval
    buf = literal.call
    # Made before warnings are on: thrift 0.19's MemoryBufferTransport.new changes a chilled literal of its own
    # (Bytes.empty_byte_buffer), which warns too.
    t = writer(buf)
    Warning[:deprecated] = true
    expect { literal.call << "c" }.to output(/literal string will be frozen/).to_stderr
    expect { t.write("c") }.to output(/literal string will be frozen/).to_stderr
    expect { t.write("d") }.not_to output.to_stderr
    expect(buf).to eq("abcd")
  ensure
    Warning[:deprecated] = deprecated
  end
end
