# frozen_string_literal: true

# A struct read sets each field's ivar; from Ruby 3.2 on it does so by a shape transition learned from one
# rb_ivar_set (ext/thrift_native/src/ivars/stores.rs): the value written into the object's array and the next shape
# put in its flags, as YJIT does. Whatever the object was before (other ivars, an object_id, a singleton class,
# frozen, a class with too many shapes, more fields than fit inside the object), it must end with exactly the ivars,
# in the order and with the values, that setting them one by one from Ruby gives, and its values must survive GC.
module IvarStoreSpec
  # More string fields than fit inside an object (which then moves its ivars out, a new capacity).
  class Wide
    include Thrift::Struct
    include Thrift::Struct_Union

    FIELDS = (1..40).to_h { |i| [i, { type: Thrift::Types::STRING, name: "f#{i}" }] }.freeze
    def struct_fields = FIELDS
    def validate; end
    Thrift::Struct.generate_accessors(self)
  end

  # A subclass whose instances get their fields in few orders only (the first example gives Wide so many shape
  # variations that from Ruby 3.3 on its instances keep their ivars in a hash table, where no transition is learned).
  class Steady < Wide
  end

  # A subclass made to have too many shape variations (Ruby 3.3 on: its instances' ivars go into a hash table).
  class Complex < Wide
  end
end

require "objspace"

RSpec.describe "Struct fields set by learned shape transitions" do
  let(:wide) { IvarStoreSpec::Wide }

  # The bytes of a `wide` with the fields of `numbers` set, in the given order on the wire.
  def message(numbers, protocol = Thrift::BinaryProtocolAccelerated)
    out = Thrift::MemoryBufferTransport.new
    prot = protocol.new(out)
    prot.write_struct_begin("IvarStoreWide")
    numbers.each do |i|
      prot.write_field_begin("f#{i}", Thrift::Types::STRING, i)
      prot.write_string("v#{i}-#{numbers.size}")
      prot.write_field_end
    end
    prot.write_field_stop
    prot.write_struct_end
    out.read(out.available)
  end

  def read_into(obj, bytes, protocol = Thrift::BinaryProtocolAccelerated)
    obj.read(protocol.new(Thrift::MemoryBufferTransport.new(bytes)))
    obj
  end

  # What Ruby itself makes of `twin` given the same fields one by one.
  def set_like_ruby(twin, numbers)
    numbers.each { |i| twin.instance_variable_set(:"@f#{i}", "v#{i}-#{numbers.size}") }
    twin
  end

  def ivars(obj)
    obj.instance_variables.map { |name| [name, obj.instance_variable_get(name)] }
  end

  # Each way an object can be when a read starts, applied alike to the object read into and to its twin.
  PREPARATIONS = {
    plain: ->(_o) {},
    padded: ->(o) { o.instance_variable_set(:@pad, 1) },
    object_id: ->(o) { o.object_id },
    singleton: ->(o) { o.singleton_class },
    removed: lambda { |o|
      o.instance_variable_set(:@gone, 1)
      o.remove_instance_variable(:@gone)
    },
  }.freeze

  it "gives every object the ivars, order and values that Ruby's own sets give, across shapes taken in turn" do
    orders = [[1, 2, 3], [3, 2, 1], [1, 2, 3], (1..12).to_a, (1..40).to_a, [2, 4, 6, 8], [1, 2, 3], (1..40).to_a.reverse]
    [Thrift::BinaryProtocolAccelerated, Thrift::CompactProtocol].each do |protocol|
      3.times do
        orders.each do |numbers|
          bytes = message(numbers, protocol)
          PREPARATIONS.each do |name, prepare|
            obj = wide.new.tap(&prepare)
            twin = set_like_ruby(wide.new.tap(&prepare), numbers)
            expect(ivars(read_into(obj, bytes, protocol))).to eq(ivars(twin)), "#{protocol} #{numbers} #{name}"
            # Ruby reads and writes the object by its shape afterwards: the shape must be the one it has.
            obj.instance_variable_set(:@after, numbers.size)
            twin.instance_variable_set(:@after, numbers.size)
            expect(ivars(obj)).to eq(ivars(twin))
            expect(obj.f1).to eq(twin.f1)
          end
        end
      end
    end
  end

  it "overwrites the fields of an object read into again, and raises FrozenError for a frozen one" do
    obj = read_into(wide.new, message([1, 2, 3]))
    5.times { read_into(obj, message([3, 1, 2])) }
    expect(ivars(obj)).to eq(ivars(set_like_ruby(wide.new, [1, 2, 3])))
    frozen = read_into(wide.new, message([1, 2, 3])).freeze
    expect { read_into(frozen, message([1, 2, 3])) }.to raise_error(FrozenError)
    expect { read_into(wide.new.freeze, message([1])) }.to raise_error(FrozenError)
  end

  it "sets fields on instances of a class that has had too many shapes" do
    complex = IvarStoreSpec::Complex
    # Warning[:performance] exists from Ruby 3.3 on, the Ruby that warns of too many variations.
    performance = begin
      Warning[:performance]
    rescue ArgumentError
      nil
    end
    Warning[:performance] = false unless performance.nil?
    begin
      10.times { |i| complex.new.instance_variable_set(:"@variation#{i}", i) }
    ensure
      Warning[:performance] = performance unless performance.nil?
    end
    3.times do
      obj = read_into(complex.new, message([5, 6, 7]))
      expect(ivars(obj)).to eq(ivars(set_like_ruby(complex.new, [5, 6, 7])))
    end
  end

  # The values are young Strings written into objects the GC may already have promoted: without the write barrier
  # a minor GC would free them under the old object.
  it "keeps the values alive through minor and full GCs and compaction, old objects read into included" do
    wide = IvarStoreSpec::Steady
    numbers = (1..40).to_a
    old = Array.new(20) { read_into(wide.new, message(numbers)) }
    4.times { GC.start }
    expect(old.map { |o| ObjectSpace.dump(o) }).to all(include('"old":true'))
    old.each { |o| read_into(o, message(numbers.reverse)) }
    values = ObjectSpace::WeakMap.new
    old.each { |o| o.instance_variables.each { |name| values[o.instance_variable_get(name)] = true } }
    # A minor GC marks from the old objects only those the write barrier remembered.
    GC.start(full_mark: false, immediate_sweep: true)
    expect(values.keys.size).to eq(old.size * numbers.size)
    fresh = Array.new(20) { read_into(wide.new, message(numbers)) }
    GC.start(full_mark: false, immediate_sweep: true)
    RubyFacts.verify_compaction if GC.respond_to?(:verify_compaction_references)
    expected = ivars(set_like_ruby(wide.new, numbers))
    (old + fresh).each { |o| expect(ivars(o)).to eq(expected) }
  end

  it "reads right under GC.stress" do
    wide = IvarStoreSpec::Steady
    bytes = message((1..20).to_a)
    GC.stress = GcStress.setting
    objs = begin
      Array.new(3) { read_into(wide.new, bytes) }
    ensure
      GC.stress = false
    end
    objs.each { |o| expect(ivars(o)).to eq(ivars(set_like_ruby(wide.new, (1..20).to_a))) }
  end
end
