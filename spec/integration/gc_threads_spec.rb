# frozen_string_literal: true

require "zlib"
require "stringio"
require_relative "../../test_support/codec_types"
require_relative "../../test_support/codec_samples"
CodecTypes.load!

# The struct codec (both protocols, fast and dispatch paths) and GzipWriter under GC.stress, under compaction that
# moves every object, and from 8 threads at once. Expected bytes come from the installed C accelerator in a child
# process, so every result here is checked exactly. GC_THREADS_SCALE multiplies the sizes (bin/stress raises it).
module GcThreads
  SCALE = Integer(ENV.fetch("GC_THREADS_SCALE", "1"))
  PROTOCOLS = { "binary" => Thrift::BinaryProtocolAccelerated, "compact" => Thrift::CompactProtocol }.freeze
end

RSpec.describe "GC and threads" do

  # Small Everything instances: scalars, a union, a few short containers of every shape, a nested child.
  def small_objects(count)
    r = Random.new(99)
    Array.new(count) do
      leaf = CodecTest::Leaf.new(id: r.rand(100), label: "l#{r.rand(10)}")
      CodecTest::Everything.new(
        scalars: CodecSamples.scalars(r), choice: CodecTest::Choice.new(:leaf, leaf),
        containers: CodecTest::Containers.new(i32s: [1, -2], strings: ["a", "字"], int_set: Set[3], leaves: [leaf],
                                              string_to_int: { "k" => 1 }, int_to_leaf: { 2**40 => leaf },
                                              nested_lists: [["x"], []], double_to_bool: { 0.5 => true }),
        child: CodecTest::Everything.new(version: 2), version: r.rand(1000)
      )
    end
  end

  def samples(seed, count)
    r = Random.new(seed)
    Array.new(count) { CodecSamples.everything(r) }
  end

  def encode(obj, klass)
    trans = Thrift::MemoryBufferTransport.new
    obj.write(klass.new(trans))
    trans.read(trans.available)
  end

  def decode(bytes, klass)
    CodecTest::Everything.new.tap { |o| o.read(klass.new(Thrift::MemoryBufferTransport.new(bytes))) }
  end

  # A protocol subclass takes the dispatch path.
  def dispatching(klass) = Class.new(klass)

  def gzip(chunks, level: 6)
    io = StringIO.new("".b)
    gz = ThriftNative::GzipWriter.new(io, level)
    gz.mtime = 1_600_000_000
    gz.orig_name = "data.bin"
    chunks.each { |c| gz.write(c) }
    gz.puts("end")
    gz.close
    io.string
  end

  def gzip_chunks(seed, count)
    r = Random.new(seed)
    Array.new(count) { |i| i.even? ? r.bytes(r.rand(0..300)) : "line #{i} " * r.rand(0..40) }
  end

  GcThreads::PROTOCOLS.each do |name, klass|
    context "with the #{name} protocol" do
      let(:count) { 2 * GcThreads::SCALE }
      let(:expected) { StructRuns.run("c", name, "write", 31, count) }
      let(:objects) { samples(31, count) }

      it "encodes and decodes exactly under GC.stress, on both paths" do
        # GC.stress collects at every allocation: small structs that still hold every kind of field.
        objects = small_objects(GcThreads::SCALE)
        expected = StructRuns.run("c", name, "encode", input: objects)
        expect(expected.map(&:bytesize)).to all(be > 40)
        results = nil
        begin
          GC.stress = GcStress.setting
          results = [klass, dispatching(klass)].map do |k|
            bytes = objects.map { |o| encode(o, k) }
            [bytes, expected.map { |b| decode(b, k) }]
          end
        ensure
          GC.stress = false
        end
        results.each do |bytes, decoded|
          expect(bytes).to eq(expected)
          expect(decoded).to eq(objects)
        end
      end

      it "encodes and decodes exactly after compaction moved every object, plans and caches included" do
        objects.each { |o| expect(decode(encode(o, klass), klass)).to eq(o) } # plans compiled, slots learnt
        prot = klass.new(Thrift::MemoryBufferTransport.new)
        objects.first.write(prot) # a transport half-way through, across the move
        RubyFacts.verify_compaction
        objects.drop(1).each { |o| o.write(prot) }
        got = prot.trans.read(prot.trans.available)
        expect(got).to eq(expected.join)
        RubyFacts.verify_compaction
        expect(expected.map { |b| decode(b, klass) }).to eq(objects)
        expect(expected.map { |b| decode(b, dispatching(klass)) }).to eq(objects)
      end
    end
  end

  # FramedTransport and BufferedTransport over a Ruby transport (their buffers read and written in place, refilled
  # mid-struct), and HeaderProtocol over a HeaderTransport (thrift master, THRIFT_MASTER_RB): in a child process
  # (support/runners/stack_gc_runner.rb), whose small heap keeps GC.stress affordable, compared with the C accelerator.
  %w[binary compact].product(%w[framed buffered header header-zlib]).each do |name, transport|
    it "writes and reads #{name} through #{transport} exactly under GC.stress, compaction, 8 threads" do
      header = transport.start_with?("header")
      skip "THRIFT_MASTER_RB is not set" if header && ENV.fetch("THRIFT_MASTER_RB", "").empty?
      count = 3 * GcThreads::SCALE
      expected = StructRuns.run(header ? "c-master" : "c", name, "write", 41, count, transport: transport)
      out = ChildRuby.marshal(File.expand_path("../support/runners/stack_gc_runner.rb", __dir__), name, transport, count, input: expected)
      expect(out[:stress_written]).to eq(expected.first(2))
      expect(out.values_at(:stress_read, :compacted_read)).to eq([true, true])
      expect(out[:threads].size).to eq(8)
      out[:threads].each do |written, read, read_dispatch|
        expect(written).to eq(expected)
        expect([read, read_dispatch]).to eq([true, true])
      end
    end
  end

  describe ThriftNative::GzipWriter do
    let(:chunks) { gzip_chunks(8, 12 * GcThreads::SCALE) }
    let(:plain) { chunks.join + "end\n" }

    it "writes the same bytes under GC.stress" do
      want = gzip(chunks)
      expect(gunzip(want)).to eq(plain.b)
      got = begin
        GC.stress = GcStress.setting
        gzip(chunks)
      ensure
        GC.stress = false
      end
      expect(got).to eq(want)
    end

    it "keeps its io and settings across compaction" do
      want = gzip(chunks)
      io = StringIO.new("".b)
      gz = ThriftNative::GzipWriter.new(io, 6)
      gz.mtime = 1_600_000_000
      gz.orig_name = "data.bin"
      half = chunks.size / 2
      chunks.first(half).each { |c| gz.write(c) }
      RubyFacts.verify_compaction
      chunks.drop(half).each { |c| gz.write(c) }
      RubyFacts.verify_compaction
      gz.puts("end")
      gz.close
      expect(io.string).to eq(want)
    end

    it "compresses past the GVL-release threshold correctly from 8 threads" do
      big = Array.new(8) { |t| (("thread #{t} " * 5000) + Random.new(t).bytes(70_000)) * GcThreads::SCALE }
      want = big.map { |b| gzip([b, b]) }
      got = 8.times.map { |t| Thread.new { gzip([big[t], big[t]]) } }.map(&:value)
      expect(got).to eq(want)
      expect(gunzip(got[3])).to eq((big[3] * 2) + "end\n")
    end
  end

  it "gives exact results with 8 threads each using its own protocols, transports and writer" do
    seeds = (40...48).to_a
    per = 3 * GcThreads::SCALE
    expected = GcThreads::PROTOCOLS.keys.to_h { |name| [name, seeds.to_h { |s| [s, StructRuns.run("c", name, "write", s, per)] }] }
    objects = seeds.to_h { |s| [s, samples(s, per)] }
    chunks = seeds.to_h { |s| [s, gzip_chunks(s, 20)] }
    gz_want = seeds.to_h { |s| [s, gzip(chunks[s])] }

    threads = seeds.map do |s|
      Thread.new do
        Array.new(3 * GcThreads::SCALE) do
          GcThreads::PROTOCOLS.to_h do |name, klass|
            k = s.even? ? klass : dispatching(klass)
            [name, [objects[s].map { |o| encode(o, k) }, expected[name][s].map { |b| decode(b, k) }]]
          end.merge("gzip" => gzip(chunks[s]))
        end
      end
    end
    threads.zip(seeds).each do |th, s|
      rounds = th.value
      expect(rounds.size).to eq(3 * GcThreads::SCALE)
      rounds.each do |round|
        GcThreads::PROTOCOLS.each_key do |name|
          expect(round[name][0]).to eq(expected[name][s])
          expect(round[name][1]).to eq(objects[s])
        end
        expect(round["gzip"]).to eq(gz_want[s])
      end
    end
  end
end
