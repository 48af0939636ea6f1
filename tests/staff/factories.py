import factory
from django.contrib.auth.models import User
from factory.django import DjangoModelFactory, Password


class StaffUserFactory(DjangoModelFactory[User]):
    class Meta:
        model = User
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"staff{n}")
    email = factory.LazyAttribute(lambda user: f"{user.username}@print.test")
    is_staff = True
    is_active = True
    password = Password("a-long-password-1")
