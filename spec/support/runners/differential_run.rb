# frozen_string_literal: true

# The protocol differential runs: random sequences of protocol operations (see protocol_runner.rb), applied in a
# child process per accelerator.
module DifferentialRun
  # The type of BinaryProtocolAccelerated's version errors with the loaded thrift: BAD_VERSION from thrift 0.23 on,
  # 0 before (its C accelerator never set its BAD_VERSION).
  BAD_VERSION_TYPE = ThriftNative::THRIFT_FEATURES[:typed_errors] ? Thrift::ProtocolException::BAD_VERSION : 0

  RUNNER = File.expand_path("protocol_runner.rb", __dir__)

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

  # Thrift types with a compact type, and the Thrift types a compact container element can have.
  SCALAR_TYPES = { byte: 3, i16: 6, i32: 8, i64: 10, double: 4, string: 11, bool: 2 }.freeze
  CONTAINER_ELEMENT_TYPES = [2, 3, 4, 6, 8, 10, 11, 12, 13, 14, 15].freeze

  # Runs ops in a child process (see protocol_runner.rb) and returns its results, bytes and transport calls.
  def run_ops(accelerator, ops, transport, protocol)
    ChildRuby.marshal(RUNNER, accelerator, transport, protocol, input: ops)
  end

  module_function

  # Values of every type and headers written in a random order, then read back in the same order, then one read
  # too many.
  def binary_ops(seed, count)
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

  # Units of [writes, reads]: naked values, structs of fields (bool fields included), container headers and message
  # envelopes. All writes come first, then a fresh protocol reads everything back in the same order.
  def random_units(r, count)
    Array.new(count) do
      case r.rand(6)
      when 0
        fields = Array.new(r.rand(1..6)) { [SCALAR_TYPES.keys.sample(random: r), r.rand(-40..300)] }
        writes = [[:write_struct_begin, "S"]]
        reads = [[:read_struct_begin]]
        fields.each do |type, id|
          writes += [[:write_field_begin, "f", SCALAR_TYPES.fetch(type), id], [:"write_#{type}", VALUE_MAKERS.fetch(type).call(r)],
                     [:write_field_end]]
          reads += [[:read_field_begin], [:"read_#{type}"], [:read_field_end]]
        end
        [writes + [[:write_field_stop], [:write_struct_end]], reads + [[:read_field_begin], [:read_struct_end]]]
      when 1
        k, v = CONTAINER_ELEMENT_TYPES.sample(2, random: r)
        [[[:write_map_begin, k, v, [0, r.rand(1..20), r.rand(0..(2**31 - 1))].sample(random: r)]], [[:read_map_begin]]]
      when 2
        e = CONTAINER_ELEMENT_TYPES.sample(random: r)
        method = %i[list set].sample(random: r)
        [[[:"write_#{method}_begin", e, [r.rand(0..14), 15, r.rand(0..(2**31 - 1))].sample(random: r)]], [[:"read_#{method}_begin"]]]
      when 3
        # Non-negative sequence ids: pure 0.14's write_varint32 never ends for a negative one.
        [[[:write_message_begin, "method#{r.rand(100)}", r.rand(1..4), r.rand(0..(2**31 - 1))]], [[:read_message_begin]]]
      else
        type = VALUE_MAKERS.keys.sample(random: r)
        [[[:"write_#{type}", VALUE_MAKERS.fetch(type).call(r)]], [[:"read_#{type}"]]]
      end
    end
  end

  def compact_ops(seed, count)
    units = random_units(Random.new(seed), count)
    units.flat_map(&:first) + [[:new_protocol]] + units.flat_map(&:last) + [[:read_byte]]
  end
end
