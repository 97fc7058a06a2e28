# frozen_string_literal: true

require_relative "../../../test_support/child_ruby"
require_relative "../../../test_support/accelerator"

# struct_runner.rb in a child Ruby (one accelerator per process): its arguments, the Marshal-dumped input on stdin,
# the Marshal-loaded answer back. A child that fails or crashes raises.
module StructRuns
  SCRIPT = File.expand_path("struct_runner.rb", __dir__)

  module_function

  def run(accelerator, protocol, *args, input: nil, dispatch: false, transport: "memory", decorator: nil)
    env = { "PROTOCOL" => protocol, "DISPATCH" => (dispatch ? "1" : nil), "TRANSPORT" => transport,
            "DECORATOR" => decorator }
    ChildRuby.marshal(SCRIPT, accelerator, *args, input: input, env: env)
  end
end
