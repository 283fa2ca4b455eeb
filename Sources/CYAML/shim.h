// libyaml (Debian's libyaml-dev): the configuration's YAML parser, wrapped once by the YAML target.
#include <yaml.h>
