# frozen_string_literal: true

require_relative "../../support/helpers/gzip_writer"

# ThriftNative::GzipWriter against Zlib::GzipWriter: #write and the IO-like writers built on it.
RSpec.describe ThriftNative::GzipWriter do
  include GzipWriterHelpers

  describe "#write" do
    it "returns the sum of the bytesizes and converts with to_s (upstream test_write)" do
      o = Object.new
      def o.to_s = "bar"
      results = both.map do |k|
        ret = nil
        data = gzip_with(k) { |gz| ret = gz.write("abc", "de", 12, nil, o, :sym) }
        [ret, gunzip(data)]
      end
      expect(results[1]).to eq(results[0])
      expect(results[1]).to eq([13, "abcde12barsym"])
    end

    it "emits nothing with no arguments, and the 10-byte header on write('')" do
      both.each do |k|
        rec = RecordingIO.new
        gz = k.new(rec)
        expect(gz.write).to eq(0)
        expect(rec.calls).to eq([])
        gz.write("")
        expect(rec.calls).to eq([[:write, 10]])
      end
    end

    it "raises GzipFile::Error when closed, even with no arguments" do
      results = both.map do |k|
        gz = k.new(StringIO.new)
        gz.close
        outcome { gz.write }
      end
      expect(results[1]).to eq(results[0])
      expect(results[1]).to eq([Zlib::GzipFile::Error, "closed gzip stream"])
    end

    it "hands io.write fresh, unfrozen binary Strings it never touches again (upstream test_zlib_writer_buffered_write)" do
      ary = []
      def ary.write(*args)
        concat(args)
      end
      gz = ours.new(ary)
      gz.write("[ruby-core:90346] [Bug #15356]")
      gz.write("\n")
      gz.write("r61631 (commit a55abcc0ca6f628fc05304f81e5a044d65ab4a68)")
      snapshot = ary.map(&:dup)
      gz.close
      expect(ary).not_to be_empty
      expect(ary.first(snapshot.size)).to eq(snapshot)
      expect(ary.map(&:encoding).uniq).to eq([Encoding::BINARY])
      expect(ary.none?(&:frozen?)).to be(true)
      expect(ary.map(&:object_id).uniq.size).to eq(ary.size)
      expect(gunzip(ary.join).split("\n")).to eq(["[ruby-core:90346] [Bug #15356]", "r61631 (commit a55abcc0ca6f628fc05304f81e5a044d65ab4a68)"])
    end

    it "keeps every handed-over String intact across a long random stream" do
      rec = RecordingIO.new
      gz = ours.new(rec)
      chunks = Array.new(40) { Random.bytes(5000) }
      chunks.each { |c| gz.write(c) }
      copies = rec.strings.map(&:dup)
      gz.close
      expect(rec.strings.first(copies.size)).to eq(copies)
      expect_decodes(rec.data, chunks.join)
    end

    it "does not keep or change the caller's String" do
      s = "hello world".dup
      data = gzip_with(ours) { |gz| gz.write(s) && s.replace("changed") }
      expect(gunzip(data)).to eq("hello world")
    end
  end

  describe "#<<, #print, #puts, #printf" do
    def logging(klass)
      Class.new(klass) do
        attr_accessor :log

        def write(*args)
          (@log ||= []) << args
          super
        end
      end
    end

    it "dispatch through #write exactly as Zlib's" do
      results = both.map do |k|
        gz = logging(k).new(StringIO.new("".b))
        gz.mtime = 1
        rets = [gz << "a" << 1, gz.print("x", "y"), gz.puts("a", "b\n", ["c", ["d"]]), gz.puts,
                gz.printf("%05d|%s", 42, "z"), gz.putc("q")]
        rets[0] = rets[0].equal?(gz)
        log = gz.log
        io = gz.close
        [rets, log, gunzip(io.string)]
      end
      expect(results[1]).to eq(results[0])
      expect(results[1][1]).to eq([["a"], [1], ["x"], ["y"], ["a", "\n"], ["b\n"], ["c", "\n"], ["d", "\n"], ["\n"],
                                   ["00042|z"]])
    end

    it "print honours $\\ and prints $_ without arguments" do
      results = both.map do |k|
        gzip_with(k) do |gz|
          $_ = "last line"
          gz.print
          old = $\
          begin
            $\ = "!"
            gz.print("a", "b")
          ensure
            $\ = old
          end
        end.then { |d| gunzip(d) }
      end
      expect(results[1]).to eq(results[0])
    end

    it "printf with no arguments raises like Zlib's" do
      expect(outcome { ours.new(StringIO.new).printf }).to eq(outcome { Zlib::GzipWriter.new(StringIO.new).printf })
    end

    it "puts writes to a file (upstream test_puts)" do
      Tempfile.create("gzw") do |t|
        t.close
        ours.open(t.path) { |gz| gz.puts("foo") }
        expect(Zlib::GzipReader.open(t.path, &:read)).to eq("foo\n")
      end
    end
  end

  describe "#putc" do
    it "writes one byte like NUM2CHR and returns its argument (upstream test_putc)" do
      results = both.map do |k|
        rets = []
        data = gzip_with(k) { |gz| [?x, "あ", 0x141, 65.7, "xyz"].each { |c| rets << gz.putc(c) } }
        [rets, gunzip(data).b]
      end
      expect(results[1]).to eq(results[0])
      expect(results[1][1]).to eq("x\xE3AAx".b)
    end

    it "raises TypeError for nil and '' with Zlib's messages, and never calls #write" do
      [nil, "", :s].each do |c|
        expect(outcome { ours.new(StringIO.new).putc(c) }).to eq(outcome { Zlib::GzipWriter.new(StringIO.new).putc(c) })
      end
      sub = Class.new(ours) { def write(*) = raise("write called") }
      expect { sub.new(StringIO.new).putc("a") }.not_to raise_error
    end
  end
end
