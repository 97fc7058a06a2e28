# frozen_string_literal: true

# The same random operation sequences, run by pure-Ruby BinaryProtocol, the installed C accelerator (Debian's
# thrift 0.14 thrift_native.so) and thrift_native, each in its own process: the bytes and the values read back
# must be identical.
RSpec.describe "BinaryProtocolAccelerated, differentially" do
  RUNNER = File.expand_path("support/protocol_runner.rb", __dir__)

  def run(accelerator, ops, transport = "plain")
    out, err, status = Open3.capture3(RbConfig.ruby, RUNNER, accelerator, transport, stdin_data: Marshal.dump(ops), binmode: true)
    raise "runner (#{accelerator}) failed: #{err}" unless status.success?

    Marshal.load(out)
  end

  VALUE_MAKERS = {
    byte: ->(r) { r.rand(-128..127) },
    bool: ->(r) { r.rand(2).zero? },
    i16: ->(r) { [r.rand(-32_768..32_767), -32_768, 32_767].sample(random: r) },
    i32: ->(r) { [r.rand(-(2**31)..(2**31 - 1)), -(2**31), 2**31 - 1, 0].sample(random: r) },
    i64: ->(r) { [r.rand(-(2**63)..(2**63 - 1)), -(2**63), 2**63 - 1, r.rand(-1000..1000)].sample(random: r) },
    double: ->(r) { [r.rand * 1e6, -r.rand, 0.0, -0.0, Float::INFINITY, 1e-310, 1e300].sample(random: r) },
    string: ->(r) { Array.new(r.rand(0..40)) { ["a", "é", "字", "\u{1F600}", " "].sample(random: r) }.join },
    binary: ->(r) { r.bytes(r.rand(0..64)) }
  }.freeze

  def random_ops(seed, count)
    r = Random.new(seed)
    writes = Array.new(count) do
      type = VALUE_MAKERS.keys.sample(random: r)
      [type, VALUE_MAKERS.fetch(type).call(r)]
    end
    headers = [[:write_message_begin, "method#{r.rand(100)}", r.rand(1..4), r.rand(-(2**31)..(2**31 - 1))],
               [:write_field_begin, "f", r.rand(1..16), r.rand(-32_768..32_767)],
               [:write_map_begin, r.rand(1..16), r.rand(1..16), r.rand(0..(2**31 - 1))],
               [:write_list_begin, r.rand(1..16), r.rand(0..1000)], [:write_set_begin, 8, 3], [:write_field_stop]]
    reads = { write_message_begin: :read_message_begin, write_field_begin: :read_field_begin,
              write_map_begin: :read_map_begin, write_list_begin: :read_list_begin, write_set_begin: :read_set_begin,
              write_field_stop: :read_field_begin }
    sequence = (writes.map { |t, v| [:"write_#{t}", v] } + headers).shuffle(random: r)
    sequence + sequence.map { |name, *| [reads.fetch(name) { :"read_#{name.to_s.delete_prefix("write_")}" }] } + [[:read_byte]]
  end

  [1, 2, 3, 4, 5].each do |seed|
    it "gives identical bytes and values for random sequence #{seed}" do
      ops = random_ops(seed, 200)
      pure = run("pure", ops)
      c = run("c", ops)
      ours = run("ours", ops)
      ours_dispatch = run("ours", ops, "subclass")
      # Pure Ruby's MemoryBufferTransport#write returns the buffer; the accelerators return nil: compare reads only.
      reads = ->(result) { result[:results].zip(ops).reject { |_, (name, *)| name.to_s.start_with?("write_") } }
      expect(ours[:results].count { |status, *| status == :ok }).to eq(ops.size - 1)
      expect(ours[:results].last[0..1]).to eq([:error, "EOFError"])
      expect(reads.call(ours)).to eq(reads.call(c))
      expect(reads.call(ours).map { |(status, value, *), op| [status, value, op] }[0...-1])
        .to eq(reads.call(pure).map { |(status, value, *), op| [status, value, op] }[0...-1])
      expect(ours_dispatch[:results]).to eq(ours[:results])
      expect(ours_dispatch[:calls]).to eq(%i[read_all read_byte read_into_buffer write])
    end
  end

  it "writes identical bytes with all three" do
    ops = random_ops(42, 300).select { |name, *| name.to_s.start_with?("write_") }
    bytes = %w[pure c ours].map { |a| run(a, ops)[:bytes] }
    expect(bytes.uniq.size).to eq(1)
    expect(bytes.first.bytesize).to be > 1000
  end

  it "agrees with the C accelerator on the failures both define the same way" do
    ops = [[:write_byte, nil], [:write_i16, nil], [:write_i32, nil], [:write_i64, nil], [:write_double, nil],
           [:write_string, nil], [:write_binary, nil], [:write_string, 12], [:write_double, "zz"], [:write_i64, 2**70],
           [:read_i32], [:read_byte], [:read_string], [:feed, "\x00\x00\x00\x02"], [:read_message_begin]]
    ours = run("ours", ops)[:results]
    c = run("c", ops)[:results]
    # 0.14's C never initialises its ProtocolException codes (section 9.2), so its BAD_VERSION arrives as type 0;
    # master's, and ours, say BAD_VERSION (4). Everything else must match exactly.
    expect(c.last).to eq([:error, "Thrift::ProtocolException", "No version identifier, old protocol client?", 0])
    expect(ours.last).to eq([:error, "Thrift::ProtocolException", "No version identifier, old protocol client?",
                             Thrift::ProtocolException::BAD_VERSION])
    expect(ours[0...-1]).to eq(c[0...-1])
  end

  it "consumes a short fixed-width read's bytes as master's C and pure Ruby do (0.14's C left them)" do
    ops = [[:feed, "\x00\x00"], [:read_i32], [:read_byte], [:feed, "\x80\x02\x00\x01"], [:read_message_begin]]
    ours = run("ours", ops)[:results]
    expect(ours.map { |status, klass, *| [status, klass] }).to eq(run("pure", ops)[:results].map { |status, klass, *| [status, klass] })
    expect(ours.last).to eq([:error, "Thrift::ProtocolException", "Missing version identifier", Thrift::ProtocolException::BAD_VERSION])
    expect(run("c", ops)[:results][2]).to eq([:ok, 0])
  end
end
