# frozen_string_literal: true

require "stringio"
require_relative "../support/fixtures/header_frames"

# HeaderTransport's native methods (thrift master's library: THRIFT_MASTER_RB, an apache/thrift checkout's lib/rb)
# against the Ruby library's own, in child processes: random sequences of reads, writes, flushes, header and limit
# changes over messages of every client type (header frames with info headers and ZLIB payloads, legacy framed and
# unframed binary and compact), some damaged. Every result, exception, ivar and buffer, and every call on the
# transport beneath, must be the same.
module HeaderRun
  RUNNER = File.expand_path("../support/runners/header_runner.rb", __dir__)
  ENV_VARS = { "THRIFT_MASTER_RB" => ENV.fetch("THRIFT_MASTER_RB", "") }.freeze

  module_function

  def run(accelerator, inner, input)
    ChildRuby.marshal(RUNNER, accelerator, inner, input: input, env: ENV_VARS).tap { |o| o[:inner] = sized(o[:inner]) }
  end

  # One deliberate difference: a frame declaring more than 1 MiB is read from a Ruby transport in 1 MiB read_all
  # calls instead of one (see transports/header/mod.rs): read sizes beyond 64 KiB read as :large.
  def sized(inner)
    return inner unless inner[0].is_a?(Array)

    [inner[0].map { |name, *args| [name, *args.map { |a| a.is_a?(Integer) && a > 65_536 ? :large : a }] }, inner[1]]
  end

  # The Ruby library's methods: all of it pure over a Ruby transport; over a MemoryBufferTransport, thrift_native's
  # own with HeaderTransport turned back to Ruby (the memory buffer's methods are then the same on both sides).
  def oracle(inner, input)
    run(inner == "memory" ? "ours-master-ruby-header" : "pure-master", inner, input)
  end

  def ours(inner, input)
    run("ours-master", inner, input)
  end

  def messages(r)
    Array.new(r.rand(1..6)) { HeaderFrames.random_message(r) }.join
  end

  def ops(r, count, zlib_writes: false)
    Array.new(count) do
      case r.rand(20)
      when 0..3 then [:read, [r.rand(-1..40), 0, 4].sample(random: r)]
      when 4 then [:read_byte]
      when 5 then [:read_into_buffer, r.rand(0..10), r.rand(0..12)]
      when 6 then [:read_all, r.rand(0..40)]
      when 7 then [:reset_protocol]
      when 8 then [:reset_message_size]
      when 9 then [:get_headers]
      when 10, 11 then [:write, r.bytes(r.rand(0..12))]
      when 12 then [:write_utf8, "é#{r.rand(100)}"]
      when 13, 14 then [:flush]
      when 15 then [:set_header, r.bytes(r.rand(0..3)), ["", "v", r.bytes(5)].sample(random: r)]
      when 16 then r.rand(2).zero? ? [:clear_headers] : [:protocol_id=, [0, 2, 5].sample(random: r)]
      when 17 then [:add_transform, zlib_writes ? 1 : [7, 0].sample(random: r)]
      when 18 then [:sequence_id=, [r.rand(-2**31...2**31), 2**31, -2**31 - 1].sample(random: r)]
      else [%i[set_max_frame_size set_max_decompressed_size].sample(random: r), [0, 3, 8, 20, 64, 2**30].sample(random: r)]
      end
    end
  end
end

RSpec.describe "HeaderTransport, natively (thrift master)" do
  before do
    skip "THRIFT_MASTER_RB (an apache/thrift checkout's lib/rb) is not set: HeaderTransport is thrift master's" if HeaderRun::ENV_VARS["THRIFT_MASTER_RB"].empty?
  end

  %w[memory recording].each do |inner|
    it "over #{inner}: the same results, ivars, buffers and calls as the Ruby library, on random sequences" do
      outcomes = Hash.new(0)
      (21..32).each do |seed|
        r = Random.new(seed)
        input = { data: HeaderRun.messages(r), ops: HeaderRun.ops(r, 50), args: [nil, [0, 2].sample(random: r)] }
        expected = HeaderRun.oracle(inner, input)
        expect(HeaderRun.ours(inner, input)).to eq(expected), "seed #{seed}"
        expected[:results].each { |o| outcomes[Outcome.ok?(o) ? :ok : Outcome.class_name(o)] += 1 }
      end
      expect(outcomes[:ok]).to be > 300
      expect(outcomes["Thrift::TransportException"]).to be > 10
    end
  end

  it "refuses client types the transport does not allow, as the library does" do
    r = Random.new(40)
    [[0], [1, 3], [2, 4], []].each do |allowed|
      input = { data: HeaderRun.messages(r), ops: [[:read, 4]] * 6 + [[:reset_protocol]] * 3, args: [allowed] }
      expect(HeaderRun.ours("recording", input)).to eq(HeaderRun.oracle("recording", input)), allowed.inspect
    end
  end

  it "over recording, with ZLIB writes: the library's very bytes (both compress with the system zlib)" do
    (33..36).each do |seed|
      r = Random.new(seed)
      input = { data: HeaderRun.messages(r), ops: HeaderRun.ops(r, 50, zlib_writes: true), args: [nil, 0] }
      expect(HeaderRun.ours("recording", input)).to eq(HeaderRun.oracle("recording", input)), "seed #{seed}"
    end
  end

  it "writes ZLIB frames of any size as the library does, and reads the library's" do
    r = Random.new(41)
    payloads = Array.new(6) { r.bytes(r.rand(0..3000)) + "abc" * r.rand(0..500) }
    ops = [[:add_transform, 1], [:set_header, "k", "v"]] + payloads.flat_map { |p| [[:write, p], [:flush]] }
    input = { data: "", ops: ops }
    ours = HeaderRun.ours("recording", input)
    ruby = HeaderRun.oracle("recording", input)
    expect(ours).to eq(ruby)
    expect(HeaderFrames.decode(ours[:inner][1]).map(&:last)).to eq(payloads.reject(&:empty?))

    back = { data: ruby[:inner][1], ops: [[:read, 100_000]] * payloads.size }
    expect(HeaderRun.ours("memory", back)[:results].map { |_, v| v[1] }).to eq(payloads.reject(&:empty?))
  end

  it "stops a ZLIB bomb at max_decompressed_size, and takes damaged ZLIB payloads as the library does" do
    bomb = HeaderFrames.header("\0" * (64 << 20), zlib: true)
    good = HeaderFrames.header("x" * 100, zlib: true)
    cut = good[0, 4] + good[4..][0...-3]
    cut[0, 4] = [cut.bytesize - 4].pack("N")
    input = { data: bomb + cut + good, ops: [[:set_max_decompressed_size, 1 << 20], [:read, 1], [:read, 1], [:read, 100]] }
    ours = HeaderRun.ours("memory", input)
    expect(ours).to eq(HeaderRun.oracle("memory", input))
    expect(ours[:results][1]).to eq([:error, "Thrift::TransportException", "Decompressed size exceeds limit of 1048576", 6])
    expect(ours[:results][2]).to eq([:error, "Thrift::TransportException", "Invalid ZLIB payload", 0])
    expect(ours[:results][3]).to eq([:ok, [:string, "x" * 100, "ASCII-8BIT", false]])
  end
end
