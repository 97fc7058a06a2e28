# frozen_string_literal: true

require_relative "../../test_support/codec_types"

CodecTypes.load!

# The native Thrift::Struct#initialize and Thrift::Union#initialize in process: what they allocate (exactly the
# struct and the copies of its defaults), that a class whose methods change gets the library's initialize back, and
# GC stress. Their results against the library's: spec/integration/struct_new_spec.rb.
RSpec.describe "Thrift::Struct#initialize and Thrift::Union#initialize" do
  def ten_fields = CodecTypes.ten_fields_class

  # What the library's `default.dup` of each default allocates, once.
  def copies_of_defaults(klass)
    defaults = klass::FIELDS.values.filter_map { |f| f[:default] }
    allocations { defaults.each(&:dup) }
  end

  it "allocates the struct and the copies of its defaults, nothing else" do
    klass = ten_fields
    args = { a: 1, b: "x" }
    expect(copies_of_defaults(klass)).to eq(2) # "five" and "ten" (an Integer's dup is itself, a Bignum's too)
    expect(allocations { klass.new(args) }).to eq(1 + 2)
    expect(allocations { klass.new }).to eq(1 + 2)
    empty = {}
    expect(allocations { CodecTest::Defaults.new(empty) }).to eq(1 + copies_of_defaults(CodecTest::Defaults))
    expect(allocations { CodecTest::Small.new }).to eq(1)
    expect(allocations { CodecTest::Small.new(empty) }).to eq(1)
    small = { flag: true, name: "n", normal: 3 }
    expect(allocations { CodecTest::Small.new(small) }).to eq(1)
    # The keys' order, then the defaults' (a fresh class: on Ruby 3.1 a class's first instances fix its ivar order).
    expect(ten_fields.new(j: "j", a: 1).instance_variables).to eq(%i[@j @a @c @d @e @f @g])
  end

  it "allocates only the union for a name and a value, or a one-pair Hash" do
    pair = { number: 5 }
    expect(allocations { CodecTest::Choice.new(:number, 5) }).to eq(1)
    expect(allocations { CodecTest::Choice.new(pair) }).to eq(1)
    expect(allocations { CodecTest::Choice.new }).to eq(1)
    expect(CodecTest::Choice.new(pair).instance_variables).to eq(%i[@setfield @value])
  end

  it "gives a class whose method is mocked, then restored, the library's initialize and then its own again" do
    klass = ten_fields
    klass.new
    allow_any_instance_of(klass).to receive(:fields_with_default_values).and_return({ "b" => "mocked" })
    expect(klass.new.b).to eq("mocked")
    expect(klass.new.c).to be_nil
    RSpec::Mocks.space.reset_all
    expect(klass.new.c).to eq(3)
    expect(allocations { klass.new }).to eq(1 + 2)
  end

  it "gives a class that overrides a collaborator after its first new the library's initialize" do
    klass = ten_fields
    klass.new(a: 1)
    klass.define_method(:name_to_id) { |name| name == "zz" ? 1 : super(name) }
    expect(klass.new(zz: 5).instance_variable_get(:@zz)).to eq(5)
  end

  it "copies defaults, so that changing one instance's leaves the class's and the next instance's alone" do
    a = CodecTest::Defaults.new
    a.name << "!"
    a.numbers << 4
    expect(CodecTest::Defaults.new.name).to eq("default name")
    expect(CodecTest::Defaults.new.numbers).to eq([1, 2, 3])
  end

  it "keeps every value under GC stress" do
    klass = ten_fields
    made = []
    GC.stress = GcStress.setting
    begin
      20.times { |i| made << klass.new(a: i, b: "b#{i}", "h" => "h#{i}") << CodecTest::Choice.new(text: "t#{i}") }
    ensure
      GC.stress = false
    end
    GC.start
    made.each_slice(2).with_index do |(s, u), i|
      expect([s.a, s.b, s.h, s.e, s.j, s.c, s.d]).to eq([i, "b#{i}", "h#{i}", "five", "ten", 3, 2**70])
      expect(u.text).to eq("t#{i}")
    end
  end
end
