# frozen_string_literal: true

# JsonProtocol writes where a struct meets the protocol's Ruby contexts, with one accelerator per process:
#   ruby json_runner.rb ACCELERATOR -> Marshal { case => [bytes written, the exception (outcome.rb) or nil, contexts] }
# `contexts` is the protocol's @context and @contexts afterwards (class names and ivars). Each case writes around
# structs with the protocol's own methods (a message, a list of structs, a map value), or makes the struct codec
# hand a value to the protocol's method (another encoding, nil, an Integer out of range or for a double), or fails
# half-way (validate, an unknown type), then may go on writing. With GC_STRESS=1 the cases run under GC.stress.
require_relative "../../../test_support/accelerator"
require_relative "../../../test_support/gc_stress"
require_relative "outcome"
Accelerator.load(ARGV.fetch(0))
require_relative "../../../test_support/codec_types"
CodecTypes.load!
$stdout.binmode

def contexts(prot)
  ctx = ->(c) { [c.class.name, c.instance_variables.map { |i| [i, c.instance_variable_get(i)] }] }
  [ctx.call(prot.instance_variable_get(:@context)), prot.instance_variable_get(:@contexts).map(&ctx)]
end

def written
  trans = Thrift::MemoryBufferTransport.new
  prot = Thrift::JsonProtocol.new(trans)
  error = begin
    yield prot
    nil
  rescue StandardError, NotImplementedError => e
    Outcome.error(e)
  end
  [trans.read(trans.available), error, contexts(prot)]
end

leaf = CodecTest::Leaf.new(id: 7, label: "x")
latin1 = "caf\xE9".dup.force_encoding("ISO-8859-1")
uuid = "00112233-4455-6677-8899-AABBCCDDEEFF"
cases = {
  message: -> { written { |p| p.write_message_begin("m", 1, 9); leaf.write(p); p.write_message_end } },
  list_of_structs: -> { written { |p| p.write_list_begin(12, 2); leaf.write(p); leaf.write(p); p.write_list_end } },
  map_value_struct: -> { written { |p| p.write_map_begin(11, 12, 1); p.write_string("k"); leaf.write(p); p.write_map_end } },
  latin1_string: -> { written { |p| CodecTest::Leaf.new(id: 1, label: latin1).write(p); p.write_i32(5) } },
  us_ascii_string: -> { written { |p| CodecTest::Leaf.new(label: "plain".encode("US-ASCII")).write(p) } },
  broken_utf8: -> { written { |p| CodecTest::Leaf.new(id: 2, label: "a\xFFb").write(p) } },
  big_integer: -> { written { |p| CodecTest::Leaf.new(id: 2**40).write(p); p.write_i32(1) } },
  integer_double: -> { written { |p| CodecTest::Scalars.new(a_double: 3).write(p) } },
  nil_in_list: -> { written { |p| CodecTest::Containers.new(strings: ["a", nil]).write(p) } },
  uuid_field: -> { written { |p| CodecTest::WithUuid.new(id: uuid).write(p) } },
  validate_fails: -> { written { |p| p.write_list_begin(12, 1); CodecTest::Scalars.new(a_color: 9).write(p) } },
  nested_validate_fails: -> { written { |p| CodecTest::Everything.new(scalars: CodecTest::Scalars.new(a_color: 9), version: 1).write(p) } },
  frozen_contexts: -> { written { |p| p.instance_variable_get(:@contexts).freeze; leaf.write(p) } },
  goes_on_after_an_error: lambda {
    written do |p|
      begin
        CodecTest::Containers.new(i32s: [1], strings: ["a", nil]).write(p)
      rescue NoMethodError
        nil
      end
      p.write_i32(3)
    end
  }
}
GC.stress = GcStress.setting if ENV["GC_STRESS"]
outcomes = cases.transform_values(&:call)
GC.stress = false
$stdout.write Marshal.dump(outcomes)
