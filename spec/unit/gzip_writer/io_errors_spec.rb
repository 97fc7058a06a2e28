# frozen_string_literal: true

require_relative "../../support/helpers/gzip_writer"

# ThriftNative::GzipWriter against Zlib::GzipWriter: an io whose write raises, and IOs that cannot be written.
RSpec.describe ThriftNative::GzipWriter do
  include GzipWriterHelpers

  describe "an io.write that raises" do
    let(:failing_io_class) do
      Class.new(RecordingIO) do
        attr_accessor :fail_next

        def write(*strs)
          if fail_next
            self.fail_next = false
            raise IOError, "disk full"
          end
          super
        end
      end
    end

    it "during write: propagates, loses that output, and the writer stays usable" do
      results = both.map do |k|
        io = failing_io_class.new
        gz = k.new(io)
        gz.write("a")
        io.fail_next = true
        r = outcome { gz.write(Random.new(1).bytes(100_000)) }
        [r, gz.closed?, outcome { gz.write("b") && gz.pos }, outcome { gz.close.class }]
      end
      expect(results[1]).to eq(results[0])
      expect(results[1][0]).to eq([IOError, "disk full"])
    end

    it "during close: propagates, ends the stream, io stays open and closed? false" do
      results = both.map do |k|
        io = failing_io_class.new
        gz = k.new(io)
        gz.write("a")
        io.fail_next = true
        [outcome { gz.close }, gz.closed?, io.kinds.include?(:close), outcome { gz.write("x") }, gz.close]
      end
      expect(results[1]).to eq(results[0])
      expect(results[1][0]).to eq([IOError, "disk full"])
    end

    it "a closed or read-only File raises IOError like Zlib's" do
      Tempfile.create("gzw") do |t|
        results = both.map do |k|
          f = File.open(t.path, "wb")
          gz = k.new(f)
          gz.write("a")
          f.close
          r1 = outcome { gz.write(Random.bytes(100_000)) }
          ro = File.open(t.path, "rb")
          gz2 = k.new(ro)
          r2 = outcome { gz2.write("x") }
          ro.close
          [r1, r2]
        end
        expect(results[1]).to eq(results[0])
        expect(results[1].map(&:first)).to eq([IOError, IOError])
      end
    end

    it "a pipe whose reader is gone raises Errno::EPIPE like Zlib's" do
      results = both.map do |k|
        rd, wr = IO.pipe
        rd.close
        gz = k.new(wr)
        r = outcome { gz.write("x") }
        wr.close unless wr.closed?
        r
      end
      expect(results[1]).to eq(results[0])
      expect(results[1].first).to eq(Errno::EPIPE)
    end

    it "an io without write raises NoMethodError at the first write, like Zlib" do
      results = both.map do |k|
        gz = k.new(Object)
        [outcome { gz.write("x") }.first, outcome { gz.close }.first]
      end
      expect(results[1]).to eq(results[0])
      expect(results[1].first).to eq(NoMethodError)
    end
  end
end
