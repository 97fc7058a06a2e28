# frozen_string_literal: true

require_relative "../support/differential_run"

# The same random operation sequences, run by pure-Ruby BinaryProtocol, the installed C accelerator (Debian's
# thrift 0.14 thrift_native.so) and thrift_native, each in its own process: the bytes and the values read back
# must be identical.
RSpec.describe "BinaryProtocolAccelerated, differentially" do
  include DifferentialRun

  def run(accelerator, ops, transport = "plain")
    run_ops(accelerator, ops, transport, "binary")
  end

  def random_ops(seed, count)
    DifferentialRun.binary_ops(seed, count)
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
    # Before thrift 0.23 the C accelerator never set its BAD_VERSION, so the type arrives as 0; ours follows the
    # loaded thrift (0.23 on: BAD_VERSION).
    expect(ours.last).to eq([:error, "Thrift::ProtocolException", "No version identifier, old protocol client?", DifferentialRun::BAD_VERSION_TYPE])
    expect(ours).to eq(c)
  end

  it "consumes a short fixed-width read's bytes as master's C and pure Ruby do (0.14's C left them)" do
    ops = [[:feed, "\x00\x00"], [:read_i32], [:read_byte], [:feed, "\x80\x02\x00\x01"], [:read_message_begin]]
    ours = run("ours", ops)[:results]
    expect(ours.map { |status, klass, *| [status, klass] }).to eq(run("pure", ops)[:results].map { |status, klass, *| [status, klass] })
    expect(ours.last).to eq([:error, "Thrift::ProtocolException", "Missing version identifier", DifferentialRun::BAD_VERSION_TYPE])
    expect(run("c", ops)[:results][2]).to eq([:ok, 0])
  end
end

# The same, for CompactProtocol: pure Ruby's CompactProtocol, Debian's 0.14 C accelerator's and ours. Ours follows
# master's C accelerator; where Debian's 0.14 C differs, the last example shows both.
RSpec.describe "CompactProtocol, differentially" do
  include DifferentialRun

  def run(accelerator, ops, transport = "plain")
    run_ops(accelerator, ops, transport, "compact")
  end


  def random_ops(seed, count)
    DifferentialRun.compact_ops(seed, count)
  end

  [1, 2, 3, 4, 5].each do |seed|
    it "gives identical bytes and values for random sequence #{seed}" do
      ops = random_ops(seed, 150)
      pure = run("pure", ops)
      c = run("c", ops)
      ours = run("ours", ops)
      ours_dispatch = run("ours", ops, "subclass")
      reads = ->(result) { result[:results].zip(ops).reject { |_, (name, *)| name.to_s.start_with?("write_") } }
      expect(ours[:results].count { |status, *| status == :ok }).to eq(ops.size - 1)
      expect(ours[:results].last[0..1]).to eq([:error, "EOFError"])
      expect(reads.call(ours)).to eq(reads.call(c))
      # Pure Ruby answers "" where the accelerators answer nil (read_struct_begin, a field header's name).
      pure_compatible = ->(result) { reads.call(result).reject { |_, (name, *)| %i[read_struct_begin read_field_begin].include?(name) } }
      expect(pure_compatible.call(ours).map { |(status, value, *), op| [status, value, op] }[0...-1])
        .to eq(pure_compatible.call(pure).map { |(status, value, *), op| [status, value, op] }[0...-1])
      expect(ours_dispatch[:results]).to eq(ours[:results])
      expect(ours_dispatch[:calls]).to eq(%i[read_all read_byte read_into_buffer write])
    end
  end

  it "writes identical bytes with all three" do
    ops = random_ops(42, 300).take_while { |name, *| name != :new_protocol }
    bytes = %w[pure c ours].map { |a| run(a, ops)[:bytes] }
    expect(bytes.uniq.size).to eq(1)
    expect(bytes.first.bytesize).to be > 1000
  end

  it "agrees with the C accelerator on the failures both define the same way" do
    ops = [[:write_byte, nil], [:write_i16, nil], [:write_i32, nil], [:write_i64, nil], [:write_double, nil],
           [:write_string, nil], [:write_binary, nil], [:write_string, :sym], [:write_double, "zz"],
           [:write_field_begin, "f", nil, 1], [:reset, ""], [:write_message_begin, "m", nil, 1],
           [:reset, ""], [:read_i32], [:read_byte], [:read_double], [:read_string], [:read_uuid],
           [:reset, "\x80\x80"], [:read_i64], [:read_byte], [:reset, "\x15"], [:read_struct_begin], [:read_field_begin],
           [:read_field_begin], [:reset, ""], [:write_struct_begin, "S"], [:write_field_begin, "f", 8, 1], [:write_struct_end],
           [:write_struct_end], [:write_field_begin, "f", 8, 2]]
    ours = run("ours", ops)[:results]
    c = run("c", ops)[:results]
    skip_uuid = ops.index([:read_uuid]) # 0.14's C has no read_uuid
    expect(c[skip_uuid][0..1]).to eq([:error, "NoMethodError"])
    expect(ours[skip_uuid][0..1]).to eq([:error, "EOFError"])
    expect(ours.each_with_index.reject { |_, i| i == skip_uuid }).to eq(c.each_with_index.reject { |_, i| i == skip_uuid })
  end

  it "differs from Debian's 0.14 C accelerator only where master's C accelerator does" do
    cases = {
      # op list => [0.14 C result, ours (master's behaviour)]
      [[:write_bool, 0]] => [[:ok, nil], [:ok, nil]],
      [[:reset, "\x81"], [:read_message_begin]] =>
        [[:error, "Thrift::ProtocolException", "Expected protocol id -126 but got -127", -1],
         [:error, "Thrift::ProtocolException", "Expected protocol id -126 but got -127", Thrift::ProtocolException::BAD_VERSION]],
      [[:reset, "\x82\x02"], [:read_message_begin]] =>
        [[:error, "Thrift::ProtocolException", "Expected version id 2 but got 1", -1],
         [:error, "Thrift::ProtocolException", "Expected version 1 but got 2", Thrift::ProtocolException::BAD_VERSION]],
      [[:reset, "\x1E"], [:read_field_begin]] =>
        [[:error, "StandardError", "don't know what type: 14", nil],
         [:error, "Thrift::ProtocolException", "Unknown compact type: 14", Thrift::ProtocolException::INVALID_DATA]],
      [[:write_struct_begin, "S"], [:write_field_begin, "f", 0, 1]] =>
        [[:error, "StandardError", "don't know what type: 0", nil],
         [:error, "Thrift::ProtocolException", "Unknown compact type: 0", Thrift::ProtocolException::INVALID_DATA]],
      [[:reset, "\x80\x80\x80\x80\x80\x01"], [:read_i32]] =>
        [[:ok, 0], [:error, "Thrift::ProtocolException", "Variable-length int over 5 bytes.", Thrift::ProtocolException::INVALID_DATA]],
      [[:reset, "\xF5\x80\x80\x80\x80\x08"], [:read_list_begin]] =>
        [[:ok, [8, -(2**31)]],
         [:error, "Thrift::ProtocolException", "Container size limit exceeded", Thrift::ProtocolException::SIZE_LIMIT]],
      [[:write_i32, 2**31]] =>
        [[:error, "RangeError", "integer 2147483648 too big to convert to `int'", nil], [:error, "RangeError", "integer out of bounds", nil]],
      [[:write_struct_begin, "S"], [:write_field_begin, "f", 8, 40_000]] =>
        [[:ok, nil], [:error, "RangeError", "integer out of bounds", nil]],
      [[:write_message_begin, "m", 1, nil]] =>
        [[:error, "TypeError", "no implicit conversion from nil to integer", nil], [:error, "StandardError", "nil argument not allowed!", nil]]
    }
    ops = cases.keys.flat_map { |case_ops| [[:reset, ""], *case_ops] }
    last_of_case = cases.keys.each_with_object([]) { |case_ops, ends| ends << (ends.last || -1) + case_ops.size + 1 }
    c = run("c", ops)
    ours = run("ours", ops)
    cases.values.zip(last_of_case).each do |(c_expected, ours_expected), i|
      expect([c[:results][i], ours[:results][i]]).to eq([c_expected, ours_expected]), "after #{ops[0..i].inspect}"
    end
    # write_bool(0): 0.14 tested `b == Qtrue`; master (and pure Ruby) use truthiness.
    bools = [[:reset, ""], [:write_bool, 0], [:write_bool, :x]]
    expect([run("c", bools)[:bytes], run("ours", bools)[:bytes], run("pure", bools)[:bytes]]).to eq(["\x02\x02".b, "\x01\x01".b, "\x01\x01".b])
    # A short payload: master's read_all leaves it unread; 0.14's C consumed it.
    short = [[:reset, "\x05abc"], [:read_string], [:read_byte]]
    expect([run("c", short)[:results].last, run("ours", short)[:results].last])
      .to eq([[:error, "EOFError", "Not enough bytes remain in memory buffer", nil], [:ok, 97]])
  end
end
