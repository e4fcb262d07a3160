# Exports the synthetic trace, then validates it with tools/check_chrome_trace.py (both must succeed).
execute_process(COMMAND ${EXPORTER} ${OUTPUT} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
    message(FATAL_ERROR "exporter failed: ${rc}")
endif()
execute_process(COMMAND ${PYTHON} ${CHECKER} --expect-ranks 2 ${OUTPUT} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
    message(FATAL_ERROR "check_chrome_trace.py rejected ${OUTPUT}: ${rc}")
endif()
