# frozen_string_literal: true

# Random programs of a protocol's write calls, for the runners that call a protocol's methods one by one
# (json_methods_runner.rb, binary_methods_runner.rb): a nest of structs, fields, maps, lists, sets and scalars, each
# scalar's argument drawn by the runner (`scalar`: kind, Random -> argument; the kinds bool, byte, i16, i32, i64,
# double, string, binary, and uuid where asked). `odd_headers` now and then puts an odd element type or size in a
# container header (out of range, negative, nil, a String), whose elements are then left out. The reads that match a
# program: `CallPrograms.reads`.
class CallPrograms
  T = Thrift::Types
  SCALARS = { T::BOOL => :bool, T::BYTE => :byte, T::I16 => :i16, T::I32 => :i32, T::I64 => :i64, T::DOUBLE => :double,
              T::STRING => :string }.freeze

  def initialize(scalar:, uuid: false, odd_headers: false, field_types: [99], field_ids: [40_000])
    @scalar = scalar
    @uuid = uuid
    @odd_headers = odd_headers
    @field_types = field_types
    @field_ids = field_ids
  end

  # Appends the write calls of one value of type `t` to `calls` (nested at most `depth` more levels).
  def value_calls(t, depth, r, calls)
    if SCALARS.key?(t)
      kind = SCALARS[t]
      kind = :binary if kind == :string && r.rand(3).zero?
      kind = :uuid if kind == :string && @uuid && r.rand(8).zero?
      calls << [:"write_#{kind}", @scalar.call(kind, r)]
    elsif t == T::STRUCT
      struct_calls(depth, r, calls)
    else
      container_calls(t, depth, r, calls)
    end
  end

  def struct_calls(depth, r, calls)
    calls << [:write_struct_begin, "S"]
    r.rand(0..3).times do |i|
      t = element_type(depth, r)
      calls << [:write_field_begin, "f", r.rand(25).zero? ? @field_types.sample(random: r) : t,
                [i + 1, -i, *@field_ids].sample(random: r)]
      value_calls(t, depth - 1, r, calls)
      calls << [:write_field_end]
    end
    calls << [:write_field_stop]
    calls << [:write_struct_end]
  end

  # The read calls that read back what `calls` wrote (a field stop is read by read_field_begin).
  def self.reads(calls)
    calls.map { |name, *| [name.to_s.sub("write_", "read_").sub("read_field_stop", "read_field_begin").to_sym] }
  end

  private

  def element_type(depth, r)
    types = SCALARS.keys + (depth.positive? ? [T::STRUCT, T::MAP, T::LIST, T::SET] : [])
    types.sample(random: r)
  end

  def container_calls(t, depth, r, calls)
    size = r.rand(0..3)
    size = [-1, 2**31, nil, "3"].sample(random: r) if @odd_headers && r.rand(30).zero?
    k, v = Array.new(2) { element_type(depth, r) }
    k = [200, -1, nil].sample(random: r) if @odd_headers && r.rand(30).zero?
    count = size.is_a?(Integer) ? size.clamp(0, 3) : 0
    count = 0 unless k.is_a?(Integer)
    case t
    when T::MAP
      calls << [:write_map_begin, k, v, size]
      count.times { value_calls(k, depth - 1, r, calls); value_calls(v, depth - 1, r, calls) }
      calls << [:write_map_end]
    when T::LIST, T::SET
      name = t == T::LIST ? "list" : "set"
      calls << [:"write_#{name}_begin", k, size]
      count.times { value_calls(k, depth - 1, r, calls) }
      calls << [:"write_#{name}_end"]
    end
  end
end
