# frozen_string_literal: true

# One accelerator's `new` of structs and unions (Thrift::Struct#initialize, Thrift::Union#initialize): a ten-field
# struct with five defaults given two fields and none (the call path issue's benchmark), a generated struct without
# defaults, one with container defaults, a union. Run by bench/run.rb in a child process per accelerator; prints one
# JSON line per operation (ns and objects per `new`).
#   ruby bench/struct_new.rb pure|c|c-master|ours [seconds_per_op]

require "json"
require_relative "batches"
require_relative "../test_support/accelerator"
require_relative "../test_support/codec_types"

IMPL = ARGV.fetch(0)
SECONDS = Float(ARGV.fetch(1, "0.3"))
Accelerator.load(IMPL)
CodecTypes.load!

BATCH = 1000

# Each call spelled out in its loop, as application code makes structs.
OPS = {
  "TenFields.new(a: 1, b: \"x\")" => "CodecTest::TenFields.new(a: 1, b: \"x\")",
  "TenFields.new" => "CodecTest::TenFields.new",
  "Small.new(flag: true, normal: 5)" => "CodecTest::Small.new(flag: true, normal: 5)",
  "Defaults.new(count: 1)" => "CodecTest::Defaults.new(count: 1)",
  "Choice.new(number: 5)" => "CodecTest::Choice.new(number: 5)"
}.freeze

OPS.each do |op, call|
  batch = eval(<<~RUBY, binding, __FILE__, __LINE__ + 1)
    lambda do
      i = 0
      while i < BATCH
        #{call}
        i += 1
      end
      BATCH
    end
  RUBY
  ns, objects = measure_batches(batch, SECONDS)
  puts JSON.generate(impl: IMPL, op: op, ns_per_call: ns.round(1), objects_per_call: objects.round(4))
  $stdout.flush
end
