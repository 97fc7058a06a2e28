# frozen_string_literal: true

require "tempfile"
require_relative "../../support/helpers/gzip_reader"

# ThriftNative::GzipReader's API beside Zlib::GzipReader's: construction and its argument errors, open/wrap/zcat,
# argument conversions and their exceptions, the closed state, enumerators, `$_`, `path`, the public method list.
# Each case runs the same code on both classes and compares the outcomes.
RSpec.describe ThriftNative::GzipReader do
  include GzipReaderHelpers

  let(:data) { "first line\nsecond\n\nthird é\nlast" }
  let(:bytes) { member(data, name: "name.txt", comment: "a comment") }

  # The outcome of the block for each class: [Zlib's, ours].
  def both_ways(&block)
    readers.map { |k| step { block.call(k) } }
  end

  def expect_same(&block)
    theirs, ours = both_ways(&block)
    expect(ours).to eq(theirs)
    theirs
  end

  it "has Zlib::GzipReader's public methods" do
    zlib = Zlib::GzipReader.public_instance_methods - Object.public_instance_methods
    ours = described_class.public_instance_methods - Object.public_instance_methods
    expect(ours.sort).to eq(zlib.sort)
    expect(described_class.singleton_methods.sort & %i[open wrap zcat]).to eq(%i[open wrap zcat])
    expect(described_class.ancestors).to include(Enumerable)
  end

  it "refuses new's argument errors as Zlib does" do
    expect_same { |k| k.new }
    expect_same { |k| k.new(StringIO.new(bytes), {}) }
    expect_same { |k| k.new(StringIO.new(bytes), 1) }
    expect_same { |k| k.new(nil) }
    expect_same { |k| k.new(StringIO.new(bytes), foo: 1, mode: "r").read }
  end

  it "converts and refuses arguments as Zlib does" do
    calls = [->(gz) { gz.read(-1) }, ->(gz) { gz.read(2**31) }, ->(gz) { gz.read("2") }, ->(gz) { gz.read(1.9) },
             ->(gz) { gz.read(1, 2, 3) }, ->(gz) { gz.readpartial }, ->(gz) { gz.readpartial(nil) },
             ->(gz) { gz.readpartial(-1) }, ->(gz) { gz.readpartial(1, 5) }, ->(gz) { gz.readpartial(0) },
             ->(gz) { gz.gets(:x) }, ->(gz) { gz.gets(1, 2) }, ->(gz) { gz.gets(chomp: true) },
             ->(gz) { gz.gets("a", "b", "c") }, ->(gz) { gz.gets(0) }, ->(gz) { gz.gets(nil, 0) },
             ->(gz) { gz.readlines(chomp: true) }, ->(gz) { gz.ungetbyte(nil) }, ->(gz) { gz.ungetc(nil) },
             ->(gz) { gz.ungetbyte("xyz") }, ->(gz) { gz.lineno = "x" }, ->(gz) { gz.lineno = 2**40 },
             ->(gz) { gz.sync = 1 }, ->(gz) { gz.each_line("b").to_a }, ->(gz) { gz.each_line(chomp: true).to_a }]
    calls.each_with_index do |call, i|
      expect_same_transcript(bytes, [["call #{i}", call], ["read", ->(gz) { gz.read }]])
    end
  end

  it "reads the header fields as Zlib does, each call a new String" do
    expect_same do |k|
      gz = k.new(StringIO.new(bytes))
      [gz.orig_name.equal?(gz.orig_name), gz.orig_name.encoding, gz.mtime, gz.mtime.utc_offset, gz.os_code,
       gz.level, gz.comment, gz.to_io.class, gz.sync, gz.external_encoding]
    end
  end

  it "sets $_ from gets and readline, not from each" do
    expect_same do |k|
      gz = k.new(StringIO.new(bytes))
      seen = []
      $_ = nil
      gz.gets
      seen << $_
      gz.readline
      seen << $_
      gz.each { |line| seen << [line, $_] }
      seen
    end
  end

  it "answers every method of a closed or finished reader as Zlib does" do
    names = %i[read readpartial gets getc getbyte readchar readbyte readline readlines eof? eof pos tell lineno crc
               sync to_io level os_code mtime orig_name comment finish rewind external_encoding each each_byte
               each_char each_line]
    %i[close finish].each do |ending|
      names.each do |name|
        expect_same do |k|
          gz = k.new(StringIO.new(bytes))
          gz.public_send(ending)
          args = name == :readpartial ? [1] : []
          [gz.closed?, gz.close, gz.unused, step { gz.public_send(name, *args) { nil } },
           step { gz.public_send(name, *args).class }]
        end
      end
      expect_same { |k| gz = k.new(StringIO.new(bytes)); gz.public_send(ending); [gz.lineno = 1, gz.ungetc("x")] }
    end
    expect_same { |k| gz = k.allocate; [gz.closed?, gz.close, gz.unused, step { gz.read }] }
  end

  it "wraps, opens and closes as Zlib does" do
    Tempfile.create(["gz", ".gz"]) do |f|
      f.binmode
      f.write(bytes)
      f.flush
      expect_same { |k| k.open(f.path) { |gz| [gz.read, gz.path, gz.to_io.closed?] } }
      expect_same { |k| io = nil; r = k.open(f.path) { |gz| io = gz.to_io; gz.read(5) }; [r, io.closed?] }
      expect_same { |k| io = nil; k.open(f.path) { |gz| io = gz.to_io; gz.finish }; [io.closed?, io.close] }
      expect_same { |k| gz = k.open(f.path); [gz.class == k, gz.read(3), gz.close.closed?] }
      expect_same { |k| k.open }
      expect_same { |k| k.open(f.path, {}) }
      expect_same { |k| k.open(f.path, external_encoding: "ISO-8859-1") { |gz| gz.read.encoding } }
      expect_same { |k| k.open(f.path, &:pos) }
    end
    expect_same { |k| io = StringIO.new(bytes); [k.wrap(io) { |gz| gz.gets }, io.closed?] }
    expect_same { |k| io = StringIO.new("not gzip"); [step { k.wrap(io) { 1 } }, io.closed?] }
    expect_same { |k| k.wrap(StringIO.new(bytes)).class == k }
    expect_same { |k| k.wrap(StringIO.new(bytes), &:finish).class }
  end

  it "raises a footer error out of open's block, leaving the file open, as Zlib does" do
    bad = bytes.dup
    bad.setbyte(bad.bytesize - 3, 0xff)
    Tempfile.create(["bad", ".gz"]) do |f|
      f.binmode
      f.write(bad)
      f.flush
      expect_same { |k| io = nil; [step { k.open(f.path) { |gz| io = gz.to_io; gz.read } }, io.closed?] }
      expect_same { |k| step { k.open(f.path) { |gz| gz.read; raise "inner" } } }
    end
  end

  it "reads every member with zcat as Zlib does" do
    three = member("first\n") + member("second\n") + member("third")
    expect_same { |k| k.zcat(StringIO.new(three)) }
    expect_same { |k| lines = []; [k.zcat(StringIO.new(three)) { |l| lines << l }, lines] }
    expect_same { |k| k.zcat(StringIO.new(three), {}) }
    expect_same { |k| k.zcat(StringIO.new(three), external_encoding: "UTF-8") }
    expect_same { |k| k.zcat(StringIO.new("")) }
    expect_same { |k| k.zcat }
    expect_same { |k| k.zcat(StringIO.new(three), 1, 2) }
  end

  it "follows the loaded zlib's eof? (reading ahead in zlib 3.2.3, not before) and read's arity" do
    header_first = Class.new do
      attr_reader :reads

      def initialize(bytes) = (@chunks = [bytes[0, 10], bytes[10..]]; @reads = 0)
      def readpartial(*) = (@reads += 1; @chunks.shift or raise EOFError)
    end
    expect_same { |k| io = header_first.new(bytes); gz = k.new(io); [gz.eof?, io.reads, gz.read] }
    expect_same { |k| k.new(StringIO.new(bytes)).read(3, +"") }
    short = member("x" * 2030)
    expect_same { |k| gz = k.new(StringIO.new(short)); out = []; out << gz.readpartial(1024) until gz.eof?; out.size }
  end

  it "rewinds as Zlib does: to the body's start, lineno and sync cleared, the header kept" do
    expect_same_transcript(member(text_lines(500)) + "trailer",
                           [["gets", ->(gz) { gz.gets }], ["sync=", ->(gz) { gz.sync = true }],
                            ["read", ->(gz) { gz.read.bytesize }], ["unused", ->(gz) { gz.unused }],
                            ["rewind", ->(gz) { gz.rewind }], ["sync", ->(gz) { gz.sync }],
                            ["crc", ->(gz) { gz.crc }], ["gets", ->(gz) { gz.gets }],
                            ["ungetc", ->(gz) { gz.ungetc("zz") }], ["rewind", ->(gz) { gz.rewind }],
                            ["read(4)", ->(gz) { gz.read(4) }], ["name", ->(gz) { gz.orig_name }]])
    expect_same { |k| r, w = IO.pipe; w.write(bytes); w.close; gz = k.new(r); gz.read(2); gz.rewind }
    expect_same { |k| gz = k.new(make_io(:read_only, bytes)); gz.rewind }
  end

  it "reads paragraphs, multi-byte separators and limits at character boundaries as Zlib does" do
    text = "\n\npara one\nline\n\n\n\npara two\n\nlast" + "ab\r\nc" + "ééé" * 3 + "abcXdef"
    steps = [["gets('')", ->(gz) { gz.gets("") }], ["gets('')", ->(gz) { gz.gets("") }],
             ["gets(\"\\r\\n\")", ->(gz) { gz.gets("\r\n") }], ["gets(3)", ->(gz) { gz.gets(3) }],
             ["gets(nil, 3)", ->(gz) { gz.gets(nil, 3) }], ["gets('X', 2)", ->(gz) { gz.gets("X", 2) }],
             ["gets(nil)", ->(gz) { gz.gets(nil) }], ["gets(nil)", ->(gz) { gz.gets(nil) }],
             ["gets('é')", ->(gz) { gz.gets("é") }]]
    expect_same_transcript(member(text), steps)
    expect_same_transcript(member("ab\r\nc"), [["a", ->(gz) { gz.gets("\r\n") }], ["b", ->(gz) { gz.gets("\r\n") }],
                                               ["c", ->(gz) { gz.gets("\r\n") }]])
    old = $/
    begin
      $/ = "d"
      expect_same_transcript(member("abcdefd"), [["gets", ->(gz) { gz.gets }], ["each", ->(gz) { gz.each.to_a }]])
    ensure
      $/ = old
    end
  end
end

RSpec.describe ThriftNative::GzipReader, "beside Zlib where Zlib fails" do
  include GzipReaderHelpers

  # Zlib's reader reads through a NULL encoding there and crashes the VM (seen on 3.1): ours takes the default
  # external encoding, as `new` without options does.
  it "reads with internal_encoding: nil or '-' in the default external encoding" do
    [{ internal_encoding: nil }, { internal_encoding: "-" }].each do |opts|
      gz = described_class.new(StringIO.new(member("ab\ncd")), **opts)
      expect([gz.external_encoding, gz.gets, gz.getc, gz.read]).to eq([Encoding.default_external, "ab\n", "c", "d"])
    end
  end

  it "reads an IO whose readpartial takes one argument, as Zlib does" do
    one_arg = Class.new(File) { def readpartial(len) = super(len) }
    Tempfile.create(["one", ".gz"]) do |f|
      f.binmode
      f.write(member(text_lines(300)))
      f.flush
      outcomes = readers.map { |k| step { one_arg.open(f.path, "rb") { |io| k.new(io).read } } }
      expect(outcomes[1]).to eq(outcomes[0])
      expect(outcomes[1].first).to eq(:ok)
    end
  end
end
