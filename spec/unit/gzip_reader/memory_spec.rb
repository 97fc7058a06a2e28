# frozen_string_literal: true

require_relative "../../support/helpers/gzip_reader"

# ThriftNative::GzipReader's objects and memory: what a read allocates (exactly), what a bomb makes it hold, what
# the GC is told, compaction, GC.stress and threads.
RSpec.describe ThriftNative::GzipReader do
  include GzipReaderHelpers

  let(:data) { pattern(2 * 1024 * 1024) + text_lines(20_000).b }
  let(:bytes) { member(data, writer: ThriftNative::GzipWriter) }

  describe "allocations" do
    before { allocations { nil } }

    it "allocates nothing per readpartial or read into the caller's buffer, over a StringIO or a pipe" do
      [-> { StringIO.new(bytes) }, -> { pipe_with(bytes) }].each do |make|
        gz = described_class.new(make.call)
        buf = +""
        gz.readpartial(16_384, buf)
        gz.read(16_384, buf) if read_takes_outbuf?
        expect(allocations_per(40) { gz.readpartial(16_384, buf) }).to eq(0)
        expect(allocations_per(40) { gz.read(1000, buf) }).to eq(0) if read_takes_outbuf?
        gz.close
      end
    end

    it "allocates one String per read without a buffer, and for each line only the line" do
      gz = described_class.new(StringIO.new(bytes))
      gz.read(10)
      expect(allocations_per(200) { gz.read(1000) }).to eq(200)
      expect(allocations_per(200) { gz.readpartial(1000) }).to eq(200)
      expect(allocations_per(200) { gz.getc }).to eq(200)
      expect(allocations_per(200) { gz.getbyte }).to eq(0)
      gz.read(2 * 1024 * 1024 - gz.pos) # to the text
      expect(allocations_per(500) { gz.gets }).to eq(500)
      text = member(text_lines(2000))
      readers_of_text = Array.new(2) { described_class.new(StringIO.new(text)) }
      lines = 0
      count = ->(_line) { lines += 1 }
      n = allocations { readers_of_text.pop.each_line(&count) } # the first reader warms the call site up
      expect(lines).to eq(4000)
      expect(n).to eq(2000)
    end

    it "allocates no more objects than Zlib per readpartial into a buffer" do
      counts = readers.map do |k|
        gz = k.new(StringIO.new(bytes))
        buf = +""
        gz.readpartial(16_384, buf)
        n = allocations_per(50) { gz.readpartial(16_384, buf) }
        gz.close
        n
      end
      # Zlib before 3.2.3 (Ruby 3.4) makes a String per chunk it reads; from 3.2.3 it fills the caller's buffer.
      expect(counts[1]).to eq(0)
      expect(counts[0]).to be >= counts[1]
    end
  end

  describe "memory" do
    it "holds no more than a step of a bomb read in small pieces, and gives all of it back" do
      bomb = member("\0" * (64 * 1024 * 1024), writer: ThriftNative::GzipWriter, level: 9)
      expect(bomb.bytesize).to be < 100_000
      require "objspace"
      gz = described_class.new(StringIO.new(bomb))
      buf = +""
      sizes = []
      total = 0
      while total < 8 * 1024 * 1024
        total += gz.readpartial(100, buf).bytesize
        sizes << ObjectSpace.memsize_of(gz) if (total % (1024 * 1024)) < 100
      end
      expect(sizes.max).to be < 512 * 1024
      expect(gz.read.bytesize).to eq(64 * 1024 * 1024 - total)
      gz.close
    end

    it "reports its inflate state to the GC while the stream lives, and in memsize_of" do
      require "objspace"
      GC.disable
      begin
        before = GC.stat(:malloc_increase_bytes)
        gz = described_class.new(StringIO.new(bytes))
        opened = GC.stat(:malloc_increase_bytes)
        size_open = ObjectSpace.memsize_of(gz)
        gz.close
      ensure
        GC.enable
      end
      expect(opened - before).to be >= 40 * 1024
      expect(size_open).to be > 40 * 1024
      expect(ObjectSpace.memsize_of(gz)).to be < 4 * 1024
    end

    it "survives GC.compact while readers hold their io, header and buffers" do
      made = Array.new(20) do |i|
        gz = described_class.new(StringIO.new(member("before #{i}\nafter #{i}\n", name: "n#{i}", comment: "c#{i}")))
        gz.gets
        gz
      end
      GC.compact
      RubyFacts.verify_compaction
      made.each_with_index do |gz, i|
        expect([gz.orig_name, gz.comment, gz.read, gz.unused]).to eq(["n#{i}", "c#{i}", "after #{i}\n", nil])
      end
    end

    it "works under GC.stress" do
      small = member(text_lines(40), name: "stress")
      GC.stress = GcStress.setting
      ours = begin
        gz = described_class.new(StringIO.new(small))
        [gz.gets, gz.read(10), gz.readpartial(7, +""), gz.readlines, gz.orig_name, gz.unused, gz.close.class]
      ensure
        GC.stress = false
      end
      gz = Zlib::GzipReader.new(StringIO.new(small))
      expect(ours).to eq([gz.gets, gz.read(10), gz.readpartial(7, +""), gz.readlines, gz.orig_name, gz.unused,
                          gz.close.class])
    end
  end

  describe "threads" do
    it "inflates without the GVL while other threads live, another thread's call on it waiting its turn" do
      data = text_lines(20_000).b
      gz = described_class.new(StringIO.new(member(data)))
      sleeper = Thread.new { sleep }
      pieces = Array.new(4) do
        Thread.new do
          out = []
          while (piece = gz.read(1000))
            out << piece
          end
          out
        end
      end.flat_map(&:value)
      sleeper.kill.join
      expect(pieces.sum(&:bytesize)).to eq(data.bytesize)
      expect(pieces.join.bytes.tally).to eq(data.bytes.tally)
      expect([gz.eof?, gz.read, gz.close.class]).to eq([true, "", StringIO])
    end

    it "reads a pipe in one thread while others run, and many readers at once" do
      results = Array.new(4) do |i|
        Thread.new do
          gz = described_class.new(pipe_with(member(text_lines(3000, seed: i))))
          out = +""
          buf = +""
          out << buf while gz.readpartial(5000, buf) rescue EOFError # rubocop:disable Style/RescueModifier
          [out, gz.close.class]
        end
      end.map(&:value)
      results.each_with_index do |(out, closed), i|
        expect(out.b).to eq(text_lines(3000, seed: i).b)
        expect(closed).to eq(IO)
      end
    end
  end
end
