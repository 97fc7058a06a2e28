# frozen_string_literal: true

# `new` of structs and unions with one accelerator, for the differential spec of the native initialize (one process
# per accelerator: pure Ruby and the C accelerator run the library's own initialize).
#   ruby struct_new_runner.rb ACCELERATOR -> Marshal [[case name, outcome], ...]
# An outcome is what `new` made (each ivar in order: name, inspect, class, frozen?, whether it is the very object of
# the class's default), the block's calls, and the class ivars it left; or the exception (outcome.rb, first line).
require_relative "../../../test_support/accelerator"
require_relative "../../../test_support/codec_types"
require_relative "outcome"
require_relative "../fixtures/key_named"

Accelerator.load(ARGV.fetch(0))
CodecTypes.load!
$stdout.binmode

include CodecTest # rubocop:disable Style/MixinUsage

# A default whose dup raises (StandardError: the library keeps the default itself).
class DupRefuses
  def dup = raise(ArgumentError, "no copies")
  def inspect = "#<DupRefuses>"
end

# A default whose dup raises what `rescue` does not catch.
class DupFails
  def dup = raise(NotImplementedError, "never")
  def inspect = "#<DupFails>"
end

def with_default(default, name = "WithDefault")
  Class.new do
    include ::Thrift::Struct
    include ::Thrift::Struct_Union
    const_set(:FIELDS, { 1 => { type: ::Thrift::Types::STRUCT, name: "x", default: default, class: Leaf } })
    def struct_fields = self.class::FIELDS
    define_singleton_method(:name) { name }
  end
end

class HashSubclass < Hash; end

# A key whose eql? raises once armed (a small Hash compares keys as it is walked).
class RaisingKey < KeyNamed
  class << self
    attr_accessor :armed
  end

  def hash = 0
  def eql?(other) = self.class.armed ? raise(IOError, "eql? called") : equal?(other)
end

def describe_ivars(obj)
  defaults = obj.class.const_defined?(:FIELDS) ? obj.class::FIELDS.values.map { |f| f[:default] } : []
  obj.instance_variables.map do |iv|
    v = obj.instance_variable_get(iv)
    [iv, v.inspect, v.class.name, v.frozen?, defaults.any? { |d| !d.nil? && d.equal?(v) && !v.frozen? }]
  end
end

def make(klass, *args, **kw, &block)
  obj = klass.new(*args, **kw, &block)
  [:ok, describe_ivars(obj), klass.instance_variables.sort]
rescue StandardError, ScriptError => e
  Outcome.failed(e, Outcome.first_line(e).gsub(/0x\h+/, "0x"))
end

def type_checking
  Thrift.type_checking = true
  yield
ensure
  Thrift.type_checking = false
end

ten = CodecTypes.ten_fields_class
cases = {
  "no arguments" => -> { make(Defaults) },
  "an empty Hash" => -> { make(Defaults, {}) },
  "Symbol keys" => -> { make(Defaults, count: 1, name: "given") },
  "String keys" => -> { make(Defaults, { "count" => 1, "tags" => nil }) },
  "a field without a default" => -> { make(Defaults, must: 5) },
  "the same field twice" => -> { make(Defaults, { count: 1, "count" => 2 }) },
  "keys in another order" => -> { make(ten, j: "j", a: 1, e: nil) },
  "ten fields, two given" => -> { make(ten, a: 1, b: "x") },
  "ten fields, none given" => -> { make(ten) },
  "no defaults" => -> { make(Small, flag: true, name: "n") },
  "an unknown Symbol" => -> { make(Defaults, count: 1, bogus: 2) },
  "an unknown String" => -> { make(Defaults, { "bogus" => 2 }) },
  "an Integer key" => -> { make(Defaults, { 1 => 2 }) },
  "a key whose to_s names a field" => -> { make(Defaults, { KeyNamed.new("count") => 9 }) },
  "a dynamic Symbol" => -> { make(Defaults, { %w[dynamic symbol].join("_").to_sym => 1 }) },
  "a UTF-16 key" => -> { make(Defaults, { "count".encode("UTF-16LE") => 1 }) },
  "a non-ASCII key" => -> { make(Defaults, { "c\u00f6unt" => 1 }) },
  "a frozen String key" => -> { make(Defaults, { "count".freeze => 4 }) },
  "a Hash subclass" => -> { make(Defaults, HashSubclass[count: 3]) },
  "nil" => -> { make(Defaults, nil) },
  "nil, no defaults" => -> { make(Leaf, nil) },
  "an Array" => -> { make(Defaults, [[:count, 1]]) },
  "two arguments" => -> { make(Defaults, {}, {}) },
  "a block" => -> { calls = []; [make(Defaults, count: 2) { |s| calls << s.count; s.count = 3 }, calls] },
  "a block, no arguments" => -> { make(Small) { |s| s.normal = 1 } },
  "a block that raises" => -> { make(Defaults) { raise IOError, "from the block" } },
  "a default whose dup raises a StandardError" => -> { make(with_default(DupRefuses.new)) },
  "a default whose dup raises a ScriptError" => -> { make(with_default(DupFails.new)) },
  "a frozen default" => -> { make(with_default("frozen".freeze, "FrozenDefault")) },
  "type checking, right types" => -> { type_checking { make(Defaults, count: 1, name: "x") } },
  "type checking, a wrong type" => -> { type_checking { make(Defaults, count: "one") } },
  "a defaults Hash changed by hand" => lambda {
    k = CodecTypes.ten_fields_class
    k.new
    k.instance_variable_get(:@fields_with_default_values)["b"] = "added"
    make(k)
  },
  "a defaults Hash with a name of no field" => lambda {
    k = CodecTypes.ten_fields_class
    k.new
    k.instance_variable_get(:@fields_with_default_values)["zzz"] = 1
    make(k, a: 1)
  },
  "a class with its own fields_with_default_values" => lambda {
    k = CodecTypes.ten_fields_class
    k.define_method(:fields_with_default_values) { { "b" => "mine" } }
    make(k, a: 1)
  },
  "name_to_id redefined after a first new" => lambda {
    k = CodecTypes.ten_fields_class
    k.new(a: 1)
    k.define_method(:name_to_id) { |name| name == "zz" ? 1 : super(name) }
    make(k, zz: 5)
  },
  "instance_variable_set redefined in the class" => lambda {
    k = CodecTypes.ten_fields_class
    k.new(a: 1)
    k.define_method(:instance_variable_set) { |n, v| super(n, v.is_a?(Integer) ? v * 10 : v) }
    make(k, a: 1)
  },
  "a module included later" => lambda {
    k = CodecTypes.ten_fields_class
    k.new
    k.include(Module.new { def fields_with_default_values = { "c" => 33 } })
    make(k)
  },
  "keys whose eql? raises" => lambda {
    h = { RaisingKey.new("count") => 1, RaisingKey.new("name") => 2 }
    RaisingKey.armed = true
    make(Defaults, h).tap { RaisingKey.armed = false }
  },
  "Thrift::Struct included through a module, then overridden" => lambda {
    base = Module.new { include ::Thrift::Struct, ::Thrift::Struct_Union }
    k = Class.new do
      include base
      const_set(:FIELDS, { 1 => { type: ::Thrift::Types::I32, name: "a" } })
      def struct_fields = self.class::FIELDS
      ::Thrift::Struct.generate_accessors(self)
    end
    k.new(a: 1)
    k.define_method(:instance_variable_set) { |n, v| super(n, v * 10) }
    make(k, a: 1)
  },
  "name_to_id undefined" => lambda {
    k = CodecTypes.ten_fields_class
    k.send(:undef_method, :name_to_id)
    [make(k), make(k, a: 1)]
  },
  "a subclass with its own initialize" => lambda {
    sub = Class.new(Defaults) { def initialize(x) = super(count: x) }
    make(sub, 12)
  },
  "send(:initialize) again" => lambda {
    obj = Defaults.new(count: 1)
    obj.send(:initialize, name: "again")
    [:ok, describe_ivars(obj)]
  },
  "what initialize answers" => lambda {
    answers = [Defaults.new.send(:initialize, count: 3), Defaults.new.send(:initialize) { |o| o.class.name },
               Choice.new.send(:initialize, :number, 5), Choice.new.send(:initialize),
               Choice.new.send(:initialize, { text: "t" })]
    [:ok, answers.map(&:inspect)]
  },
  "initialize on a frozen struct" => lambda {
    obj = Defaults.new.freeze
    begin
      obj.send(:initialize, count: 2)
    rescue StandardError => e
      Outcome.failed(e, Outcome.first_line(e).gsub(/0x\h+/, "0x"))
    end
  },
  "a union: nothing" => -> { make(Choice) },
  "a union: name and value" => -> { make(Choice, :leaf, Leaf.new) },
  "a union: a String name" => -> { make(Choice, "number", 5) },
  "a union: a one-pair Hash" => -> { make(Choice, { number: 5 }) },
  "a union: keywords" => -> { make(Choice, number: 5) },
  "a union: an empty Hash" => -> { make(Choice, {}) },
  "a union: two pairs" => -> { make(Choice, number: 5, text: "t") },
  "a union: nil name, a value" => -> { make(Choice, nil, 5) },
  "a union: false name, a value" => -> { make(Choice, false, 5) },
  "a union: false name, no value" => -> { make(Choice, false) },
  "a union: a one-pair Hash with an object key" => -> { make(Choice, { KeyNamed.new("number") => 5 }) },
  "a union: a name, nil value" => -> { make(Choice, :number, nil) },
  "a union: a Hash subclass" => -> { make(Choice, HashSubclass[number: 5]) },
  "a union: three arguments" => -> { make(Choice, :number, 5, 6) },
  "a union: type checking, right" => -> { type_checking { make(Choice, :number, 5) } },
  "a union: type checking, no such field" => -> { type_checking { make(Choice, :nope, 5) } },
  # Last: it changes Thrift for the rest of the process.
  "Thrift.type_checking redefined" => lambda {
    Thrift.singleton_class.define_method(:type_checking) { true }
    [make(Defaults, count: "one"), make(Choice, :nope, 5)]
  }
}

$stdout.write(Marshal.dump(cases.map { |name, run| [name, run.call] }))
