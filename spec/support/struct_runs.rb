# frozen_string_literal: true

require_relative "child_ruby"

# spec/support/struct_runner.rb in a child Ruby (one accelerator per process): its arguments, the Marshal-dumped
# input on stdin, the Marshal-loaded answer back. A child that fails or crashes raises.
module StructRuns
  SCRIPT = File.expand_path("struct_runner.rb", __dir__)

  module_function

  def run(accelerator, protocol, *args, input: nil, dispatch: false, transport: "memory")
    env = { "PROTOCOL" => protocol, "DISPATCH" => (dispatch ? "1" : nil), "TRANSPORT" => transport }
    ChildRuby.marshal(SCRIPT, accelerator, *args, input: input, env: env)
  end

  # Whether the loaded thrift's pure-Ruby structs can be written on this Ruby: before thrift 0.20 or so,
  # BaseProtocol#write_type tests `is_a? Fixnum`, a constant Ruby 3.2 removed (a NameError for every struct).
  def pure_structs_work?
    Thrift::BaseProtocol.new(nil).write_type({ type: Thrift::Types::I32 }, 1)
    true
  rescue NameError => e
    e.name != :Fixnum
  rescue NotImplementedError, StandardError
    true
  end
end
