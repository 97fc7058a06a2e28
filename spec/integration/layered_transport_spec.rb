# frozen_string_literal: true

# FramedTransport's and BufferedTransport's native methods against the Ruby library's own, in child processes: random
# sequences of reads and writes over a MemoryBufferTransport, a recording Ruby transport and an IOStreamTransport
# beneath, with empty, short and truncated frames. Every result, exception and final state, and every call on the
# transport beneath, must be the same.
module LayeredRun
  RUNNER = File.expand_path("../support/runners/transport_runner.rb", __dir__)

  module_function

  def run(accelerator, kind, inner, input)
    ChildRuby.marshal(RUNNER, accelerator, kind, inner, input: input)
  end

  # The Ruby library's methods, over the same transport beneath: the C accelerator's process (all Ruby transports)
  # for Ruby ones; thrift_native's with these two classes turned back to Ruby over a MemoryBufferTransport, whose
  # own methods differ between Debian's 0.14 C accelerator and master (see transport_runner.rb).
  def oracle(kind, inner, input)
    run(inner == "memory" ? "ours-ruby-layers" : "c", kind, inner, input).tap { |o| o[:inner] = sized(o[:inner]) }
  end

  def ours(kind, inner, input)
    run("ours", kind, inner, input).tap { |o| o[:inner] = sized(o[:inner]) }
  end

  # One deliberate difference: a frame declaring more than 1 MiB is read from a Ruby transport in 1 MiB read_all
  # calls instead of one (see transports/layered/mod.rs): read sizes beyond 64 KiB read as :large.
  def sized(inner)
    return inner unless inner.is_a?(Array) && inner[0].is_a?(Array)

    [inner[0].map { |name, *args| [name, *args.map { |a| a.is_a?(Integer) && a > 65_536 ? :large : a }] }, inner[1]]
  end

  def frame(bytes)
    [bytes.bytesize].pack("N") + bytes
  end

  # Frames of 0 to 40 bytes (an empty one now and then), sometimes ending in a truncated frame.
  def frames(r)
    data = Array.new(r.rand(1..6)) { frame(r.bytes([0, 0, r.rand(1..40)].sample(random: r))) }.join
    data << frame(r.bytes(30))[0, r.rand(1..20)] if r.rand(3).zero?
    data
  end

  def ops(r, kind, count)
    Array.new(count) do
      case r.rand(12)
      when 0, 1 then [:read, [r.rand(-1..50), 0].sample(random: r)]
      when 2, 3 then [:read_byte]
      when 4, 5 then [:read_into_buffer, r.rand(0..10), r.rand(0..12)]
      when 6 then [:read_all, r.rand(0..60)]
      when 7 then [:freeze_buffer, 4, r.rand(0..3)]
      when 8 then kind == "buffered" ? [:write, r.bytes(r.rand(0..9))] : [:write, r.bytes(r.rand(0..9)), [nil, r.rand(-4..12)].sample(random: r)]
      when 9 then [:write_utf8, "é#{r.rand(100)}"]
      when 10 then [:flush]
      else [:read, r.rand(0..8)]
      end
    end
  end
end

RSpec.describe "FramedTransport and BufferedTransport, natively" do
  %w[framed buffered].each do |kind|
    %w[memory recording iostream].each do |inner|
      it "#{kind} over #{inner}: the same results, state and calls as the Ruby library, on random sequences" do
        outcomes = Hash.new(0)
        [11, 12, 13, 14, 15, 16].each do |seed|
          r = Random.new(seed)
          input = { data: LayeredRun.frames(r), ops: LayeredRun.ops(r, kind, 40) }
          expected = LayeredRun.oracle(kind, inner, input)
          expect(LayeredRun.ours(kind, inner, input)).to eq(expected), "seed #{seed}"
          expected[:results].each { |o| outcomes[Outcome.failed?(o) ? :error : :ok] += 1 }
        end
        expect(outcomes[:ok]).to be > 60
        expect(outcomes[:error]).to be > 3
      end
    end
  end

  it "passes reads and writes through with FramedTransport's read and write flags off" do
    r = Random.new(5)
    [[false, true], [true, false], [false, false]].each do |flags|
      input = { data: LayeredRun.frames(r), ops: LayeredRun.ops(r, "framed", 40), flags: flags }
      expect(LayeredRun.ours("framed", "recording", input)).to eq(LayeredRun.oracle("framed", "recording", input))
    end
  end

  it "gives a subclass the Ruby methods" do
    r = Random.new(6)
    input = { data: LayeredRun.frames(r), ops: LayeredRun.ops(r, "framed", 40) }
    expect(LayeredRun.ours("framed-subclass", "memory", input)).to eq(LayeredRun.oracle("framed-subclass", "memory", input))
  end
end
