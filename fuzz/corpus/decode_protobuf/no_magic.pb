

v1	ConfigMap