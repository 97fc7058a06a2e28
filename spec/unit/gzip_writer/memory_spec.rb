# frozen_string_literal: true

require_relative "../../support/helpers/gzip_writer"

# ThriftNative::GzipWriter's objects and memory: what a write allocates, what the GC is told, compaction and
# GC.stress.
RSpec.describe ThriftNative::GzipWriter do
  include GzipWriterHelpers

  describe "allocations" do
    # The first use of the helper in a process allocates a call cache for its second GC.stat call site.
    before { allocations { nil } }

    it "allocates no object for a write that produces no output" do
      io = CountingIO.new
      gz = ours.new(io)
      gz.write("")
      small = "x" * 200
      count_before = nil
      n = allocations do
        count_before = io.count
        200.times { gz.write(small) }
      end
      expect(io.count).to eq(count_before)
      expect(n).to eq(0)
      gz.close
    end

    it "allocates exactly one String per io.write otherwise" do
      io = CountingIO.new
      gz = ours.new(io)
      gz.write("")
      chunks = Array.new(3) { Random.bytes(32 * 1024).freeze }
      writes = 0
      n = allocations do
        before = io.count
        30.times { |i| gz.write(chunks[i % 3]) }
        writes = io.count - before
      end
      expect(writes).to eq(30)
      expect(n).to eq(writes)
      gz.close
    end

    it "allocates nothing at all when io is a plain File or pipe (bytes go straight into the IO)" do
      File.open(File::NULL, "wb") do |f|
        gz = ours.new(f)
        gz.write("")
        chunks = Array.new(3) { Random.bytes(32 * 1024).freeze }
        expect(allocations { 30.times { |i| gz.write(chunks[i % 3]) } }).to eq(0)
        gz.finish
      end
    end

    it "still hands Strings to an IO whose write is overridden" do
      sub = Class.new(File) do
        attr_reader :got

        def write(*strs)
          (@got ||= []).concat(strs.map { |x| [x.class, x.encoding, x.frozen?] })
          super
        end
      end
      Tempfile.create("gzw") do |t|
        f = sub.open(t.path, "wb")
        gz = ours.new(f)
        gz.write("abc")
        gz.close
        expect(f.got.uniq).to eq([[String, Encoding::BINARY, false]])
        expect(gunzip(File.binread(t.path))).to eq("abc")
      end
    end

    it "pattern data: far fewer objects per write than Zlib" do
      buf = pattern(32 * 1024).freeze
      counts = both.map do |k|
        io = CountingIO.new
        gz = k.new(io)
        n = allocations { 64.times { gz.write(buf) } }
        gz.close
        n
      end
      expect(counts[1]).to be <= 2
      expect(counts[0]).to be >= 64
    end
  end

  describe "GC" do
    it "reports its deflate state (about 371 KiB) to the GC while the stream lives, and in memsize_of" do
      require "objspace"
      io = StringIO.new("".b)
      GC.disable
      begin
        before = GC.stat(:malloc_increase_bytes)
        gz = ours.new(io)
        opened = GC.stat(:malloc_increase_bytes)
        size_open = ObjectSpace.memsize_of(gz)
        gz.close
        closed = GC.stat(:malloc_increase_bytes)
      ensure
        GC.enable
      end
      expect(opened - before).to be_between(360 * 1024, 400 * 1024)
      expect(opened - closed).to be_between(360 * 1024, 400 * 1024)
      expect(size_open).to be > 360 * 1024
      expect(ObjectSpace.memsize_of(gz)).to be < 64 * 1024
    end

    it "survives GC.compact while a writer holds its io, name and comment" do
      writers = Array.new(20) do |i|
        io = StringIO.new("".b)
        gz = ours.new(io)
        gz.orig_name = "name#{i}"
        gz.comment = "comment#{i}"
        gz.write("before #{i} ")
        gz
      end
      GC.compact
      RubyFacts.verify_compaction
      writers.each_with_index do |gz, i|
        gz.write("after #{i}")
        io = gz.close
        r = Zlib::GzipReader.new(StringIO.new(io.string))
        expect([r.orig_name, r.comment, r.read]).to eq(["name#{i}", "comment#{i}", "before #{i} after #{i}"])
      end
    end

    it "works under GC.stress" do
      GC.stress = GcStress.setting
      bytes = begin
        gzip_with(ours) { |gz| 3.times { |i| gz.write("stress #{i} ", 1, nil) } }
      ensure
        GC.stress = false
      end
      expect(gunzip(bytes)).to eq("stress 0 1stress 1 1stress 2 1")
    end
  end
end
