# frozen_string_literal: true

# Thrift::Struct.field_accessor as thrift_native defines it (lib/thrift_native/field_setters.rb): setters that make
# no String per call, and otherwise do what the library's setters do, compared here with setters the library's own
# method defines on a twin class.
RSpec.describe "Struct field setters" do
  fields = {
    1 => { type: Thrift::Types::I32, name: "count" },
    2 => { type: Thrift::Types::STRING, name: "label" },
    3 => { type: Thrift::Types::LIST, name: "items", element: { type: Thrift::Types::I64 } }
  }.freeze
  library_accessor = Thrift::Struct.method(:field_accessor).super_method

  # A struct class of `fields` whose accessors `define` makes (Thrift::Struct.field_accessor's signature).
  make = lambda do |define|
    Class.new do
      include Thrift::Struct
      include Thrift::Struct_Union

      const_set(:FIELDS, fields)
      def struct_fields = self.class::FIELDS
      def validate; end
      fields.each_value do |field_info|
        define.call(self, field_info)
        Thrift::Struct.qmark_isset_method(self, field_info)
      end
    end
  end
  let(:ours) { make.call(Thrift::Struct.method(:field_accessor)) }
  let(:library) { make.call(library_accessor) }

  # What `block` answers or raises, as [value] or [class, message].
  def outcome
    [yield]
  rescue StandardError => e
    [e.class, e.message]
  end

  it "replaces the library's method, whose source it was written against" do
    expect(Thrift::Struct.method(:field_accessor).owner.name).to eq("ThriftNative::FieldSetters")
    expect(library_accessor).not_to be_nil
    expect(library_accessor.source_location.first).to end_with("thrift/struct.rb")
  end

  it "sets, answers and reads as the library's setters do" do
    [ours, library].each { |c| expect(c.instance_method(:count=).arity).to eq(1) }
    results = [ours, library].map do |klass|
      s = klass.new
      answers = [s.send(:count=, 5), s.send(:label=, "x"), s.send(:items=, nil), s.send(:count=, nil)]
      [answers, s.count, s.label, s.items, s.count?, s.label?, s.instance_variables, s.inspect.sub(/:0x\h+/, "")]
    end
    expect(results[0]).to eq(results[1])
    expect(results[0][0]).to eq([5, "x", nil, nil])
  end

  it "type-checks as the library's setters do when Thrift.type_checking is on" do
    Thrift.type_checking = true
    values = [5, "five", 2**40, nil, [1, 2], ["a"], 1.5]
    results = [ours, library].map do |klass|
      s = klass.new
      %i[count= label= items=].product(values).map { |setter, v| outcome { s.send(setter, v) } }
    end
    expect(results[0]).to eq(results[1])
    expect(results[0].count { |r| r.size == 2 && r[0] == Thrift::TypeError }).to be > 5
  ensure
    Thrift.type_checking = false
  end

  it "raises as the library's setter does on a frozen struct" do
    results = [ours, library].map do |klass|
      outcome { klass.new.freeze.count = 1 }.map { |part| part.is_a?(String) ? part.gsub(klass.inspect, "C") : part }
    end
    expect(results[0]).to eq(results[1])
    expect(results[0][0]).to eq(FrozenError)
  end

  it "allocates nothing per call, where the library's setter makes a String" do
    s = ours.new
    expect(allocations { s.count = 7 }).to eq(0)
    t = library.new
    expect(allocations { t.count = 7 }).to eq(1)
  end

  it "keeps a field_accessor whose source is not the library's" do
    setters = ThriftNative.const_get(:FieldSetters)
    expect(setters.library_method?(Thrift::Struct.method(:field_accessor).super_method)).to be(true)
    expect(setters.library_method?(Thrift::Struct.method(:generate_accessors))).to be(false)
    expect(setters.library_method?(method(:outcome))).to be(false)
  end
end
